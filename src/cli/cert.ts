/** `svc cert add|replace|list|show|reconcile`: the certificate registry (see docs/certificates.md). */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import {
  addCertificate,
  CERT_KINDS,
  listCertificates,
  reconcileDeployedFlows,
  reconcileInOrder,
  replaceCertificate,
  showCertificate,
  type CertificateView,
  type ReconcileFinding,
} from '../app/use-cases/certificates.js';
import { ExitError } from '../common/errors.js';
import { addStoreOptions, intArg, nameArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

const ACTOR = 'cli';

function readPem(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ExitError(1, `error: cannot read ${path}: ${(err as Error).message}`);
  }
}

export function registerCert(program: Command): void {
  const cert = program
    .command('cert')
    .description('the certificate registry: add, replace, list, show, reconcile against the flows');
  const tenant = () => tenantOption('tenant id', { required: true });
  const name = () =>
    new Option('--name <n>', 'certificate name, unique per tenant')
      .makeOptionMandatory()
      .argParser(nameArg('certificate name'));
  const kind = () =>
    new Option('--kind <kind>', 'what the certificate is for').choices([...CERT_KINDS]).default('client_cert');
  for (const [verb, what] of [
    [
      'add',
      'register one PEM certificate (a private key or a chain is refused; the key is never stored); audit cert.added',
    ],
    [
      'replace',
      'register the successor of a certificate: the current entry becomes replaced (kept), the new one current; audit cert.replaced',
    ],
  ] as const) {
    const c = cert
      .command(verb)
      .description(what)
      .argument('<path>', 'PEM file holding one certificate')
      .addOption(tenant())
      .addOption(name())
      .addOption(kind())
      .action(async (path: string, opts: { tenant: string; name: string; kind: string } & StoreFlags) => {
        const pem = readPem(path);
        await withStore(opts, async (stores) => {
          const input = { tenant: opts.tenant, name: opts.name, kind: opts.kind, pem };
          if (verb === 'add') {
            const row = await addCertificate(stores, input, ACTOR);
            out(
              `registered certificate ${row.name} of ${row.tenant} (${row.kind}), valid until ${row.validTo}\n  sha256: ${row.sha256}`,
            );
          } else {
            const r = await replaceCertificate(stores, input, ACTOR);
            out(
              `replaced certificate ${r.current.name} of ${r.current.tenant}: valid until ${r.current.validTo} (was ${r.retired.validTo})\n  sha256: ${r.current.sha256}`,
            );
          }
        });
      });
    addStoreOptions(c);
  }
  const list = cert
    .command('list')
    .description("list a tenant's certificates by soonest expiry: valid, expires in N days, expired or replaced")
    .addOption(tenant())
    .addOption(
      new Option(
        '--expiring-in <days>',
        'only current ones expiring within this many days (expired ones are always shown)',
      ).argParser(intArg('--expiring-in')),
    )
    .addOption(new Option('--json', 'print a JSON array'))
    .action(async (opts: { tenant: string; expiringIn?: number; json?: boolean } & StoreFlags) => {
      const views = await withStore(
        opts,
        async (s) =>
          listCertificates(s, {
            tenant: opts.tenant,
            expiringInDays: opts.expiringIn,
            warningDays: await s.settings.get('cert_warning_days'),
          }),
        { readOnly: true },
      );
      if (opts.json) return out(JSON.stringify(views.map(toJson), null, 2));
      if (views.length === 0)
        return out(
          `No certificates${opts.expiringIn === undefined ? '' : ` expiring within ${opts.expiringIn} days`}. Register one with: svc cert add <path> --tenant ${opts.tenant} --name <name>`,
        );
      out(
        formatTable(
          ['NAME', 'KIND', 'STATUS', 'VALID TO', 'SUBJECT', 'SHA256'],
          views.map((v) => [v.row.name, v.row.kind, v.status, v.row.validTo, v.row.subject, v.row.sha256]),
        ),
      );
    });
  addStoreOptions(list);
  const show = cert
    .command('show')
    .description("a certificate's current entry, then its retired ones, newest first")
    .addOption(tenant())
    .addOption(name())
    .addOption(new Option('--json', 'print a JSON array'))
    .action(async (opts: { tenant: string; name: string; json?: boolean } & StoreFlags) => {
      const views = await withStore(
        opts,
        async (s) => showCertificate(s, opts.tenant, opts.name, await s.settings.get('cert_warning_days')),
        { readOnly: true },
      );
      if (opts.json) return out(JSON.stringify(views.map(toJson), null, 2));
      for (const v of views) {
        out(
          [
            `${v.row.name} (${v.row.kind}) #${v.row.id}: ${v.status}`,
            `  subject:    ${v.row.subject}`,
            `  issuer:     ${v.row.issuer}`,
            `  serial:     ${v.row.serial}`,
            `  valid:      ${v.row.validFrom} to ${v.row.validTo}`,
            `  sha256:     ${v.row.sha256}`,
            `  created_at: ${v.row.createdAt}${v.row.replacedAt ? `\n  replaced:   ${v.row.replacedAt}` : ''}`,
          ].join('\n'),
        );
      }
    });
  addStoreOptions(show);
  const reconcile = cert
    .command('reconcile')
    .description(
      "read-only: check the TLS paths of every flow's latest version against the registry (of --db, or of --store), the paths read on the machine that runs it; exit 1 unless all is in order",
    )
    .addOption(tenantOption('only this tenant'))
    .addOption(new Option('--json', 'print a JSON array'))
    .action(async (opts: { tenant?: string; json?: boolean } & StoreFlags) => {
      const findings = await withStore(
        opts,
        (s) => reconcileDeployedFlows(s, (p) => readFileSync(p, 'utf8'), opts.tenant),
        { readOnly: true },
      );
      if (opts.json) out(JSON.stringify(findings, null, 2));
      else {
        // On a cluster each node reads its own files: run it on every node whose paths matter.
        out('Paths are resolved on this node, as the flows would read them here.');
        if (findings.length === 0)
          out('Nothing to reconcile: no flow references TLS material and no certificate is registered.');
        else
          out(formatTable(['VERDICT', 'TENANT', 'WHERE', 'KEY', 'PATH', 'CERTIFICATE', 'DETAIL'], findings.map(row)));
      }
      if (!reconcileInOrder(findings)) throw new ExitError(1, '');
    });
  addStoreOptions(reconcile);
}

function row(f: ReconcileFinding): string[] {
  return [f.verdict, f.tenant, f.where ?? '', f.key ?? '', f.path ?? '', f.certificate ?? '', f.detail ?? ''];
}

function toJson(v: CertificateView): Record<string, unknown> {
  const r = v.row;
  return {
    id: r.id,
    tenant: r.tenant,
    name: r.name,
    kind: r.kind,
    status: v.status,
    days_left: v.daysLeft,
    subject: r.subject,
    issuer: r.issuer,
    serial: r.serial,
    valid_from: r.validFrom,
    valid_to: r.validTo,
    sha256: r.sha256,
    created_at: r.createdAt,
    replaced_at: r.replacedAt,
  };
}

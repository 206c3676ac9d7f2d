/**
 * The certificate registry's use cases: add, replace (the old entry is kept as `replaced`), list by
 * soonest expiry, show a name's history, reconcile against the TLS paths the flows reference, and
 * the expiry sweep. Only the certificate is kept; a file holding a private key is refused whole.
 */
import { X509Certificate } from 'node:crypto';
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import type { FlowIR } from '../../ir/types.js';
import type {
  AuditStore,
  CertificatesStore,
  SettingsStore,
  TenantsStore,
  CertificateRow,
  CertKind,
  NewCertificate,
} from '../../store/contracts/index.js';
import { scanLatestArtifacts, type LatestArtifactReads } from '../runtime/deployed-flows.js';
import { assertName, requireActiveTenant } from './tenants.js';

export const CERT_KINDS: readonly CertKind[] = Object.freeze(['client_cert', 'server_cert', 'ca_cert']);

export interface CertDeps {
  readonly certificates: CertificatesStore;
  readonly tenants: TenantsStore;
  readonly audit: AuditStore;
}

const DAY_MS = 86_400_000;

/**
 * What a PEM file holds, read without keeping anything but the certificate: the registry entry's
 * certificate fields (`sha256` as `openssl x509 -fingerprint -sha256` prints it; `pem` the
 * certificate alone, re-encoded).
 */
export type ParsedCertificate = Pick<
  CertificateRow,
  'subject' | 'issuer' | 'serial' | 'validFrom' | 'validTo' | 'sha256' | 'pem'
>;

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----/g;

/**
 * Reads exactly one PEM certificate. Refuses a file holding any private key block (encrypted or
 * not), a chain, and anything that is not a certificate; the refusal never quotes the file.
 */
export function parseCertificatePem(text: string): ParsedCertificate {
  const blocks = [...text.matchAll(PEM_BLOCK)].map((m) => m[1]!);
  if (blocks.some((b) => b.includes('PRIVATE KEY'))) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      'the file holds a private key; register the certificate alone (the private key is never stored): extract it with openssl x509 -in <file> -out cert.pem',
    );
  }
  const certs = blocks.filter((b) => b === 'CERTIFICATE');
  if (certs.length === 0)
    throw new SvcError('SVC_ERR_INVALID_INPUT', 'the file holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  if (certs.length > 1)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `the file holds a chain of ${certs.length} certificates; register one certificate per name`,
    );
  if (blocks.length > 1)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `the file holds other PEM blocks besides the certificate (${blocks.filter((b) => b !== 'CERTIFICATE').join(', ')}); register the certificate alone`,
    );
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(text);
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the file is not a readable certificate: ${(err as Error).message}`);
  }
  return {
    subject: cert.subject.replace(/\n/g, ', '),
    issuer: cert.issuer.replace(/\n/g, ', '),
    serial: cert.serialNumber,
    validFrom: new Date(cert.validFrom).toISOString(),
    validTo: new Date(cert.validTo).toISOString(),
    sha256: cert.fingerprint256,
    pem: cert.toString(),
  };
}

function checkKind(kind: string): asserts kind is CertKind {
  if (!(CERT_KINDS as readonly string[]).includes(kind))
    throw new SvcError('SVC_ERR_INVALID_INPUT', `kind "${kind}" is not one of ${CERT_KINDS.join(', ')}`);
}

interface CertInput {
  readonly tenant: string;
  readonly name: string;
  readonly kind?: string;
  /** The PEM file's text (read by the caller). */
  readonly pem: string;
}

async function prepare(deps: CertDeps, input: CertInput): Promise<NewCertificate> {
  assertName('tenant', input.tenant);
  assertName('certificate name', input.name);
  const kind = input.kind ?? 'client_cert';
  checkKind(kind);
  const parsed = parseCertificatePem(input.pem);
  await requireActiveTenant(deps.tenants, input.tenant);
  return { tenant: input.tenant, name: input.name, kind, ...parsed, createdAt: isoNow() };
}

/** Registers a certificate; audited as `cert.added`. @throws SvcError naming the reason; nothing is stored */
export async function addCertificate(deps: CertDeps, input: CertInput, actor: string): Promise<CertificateRow> {
  const c = await prepare(deps, input);
  const row = await deps.certificates.add(c);
  if (row === undefined)
    throw new SvcError(
      'SVC_ERR_CONFLICT',
      `certificate "${input.name}" of tenant ${input.tenant} already exists; use svc cert replace to register its successor`,
    );
  await deps.audit.append({
    tenant: row.tenant,
    eventType: 'cert.added',
    payload: { name: row.name, kind: row.kind, sha256: row.sha256, valid_to: row.validTo, actor },
  });
  return row;
}

/** Replaces the current entry (kept as `replaced`); audited as `cert.replaced`. */
export async function replaceCertificate(
  deps: CertDeps,
  input: CertInput,
  actor: string,
): Promise<{ retired: CertificateRow; current: CertificateRow }> {
  const c = await prepare(deps, input);
  const r = await deps.certificates.replace(c, isoNow());
  if (r === undefined)
    throw new SvcError(
      'SVC_ERR_NOT_FOUND',
      `certificate "${input.name}" of tenant ${input.tenant} does not exist; register it with svc cert add`,
    );
  await deps.audit.append({
    tenant: r.current.tenant,
    eventType: 'cert.replaced',
    payload: {
      name: r.current.name,
      kind: r.current.kind,
      sha256: r.current.sha256,
      valid_to: r.current.validTo,
      replaced_sha256: r.retired.sha256,
      actor,
    },
  });
  return r;
}

/** An entry with its derived status: `valid`, `expires in N days` (inside the warning window), `expired` or `replaced`. */
export interface CertificateView {
  readonly row: CertificateRow;
  readonly status: string;
  /** Whole days until `validTo` (negative once expired). */
  readonly daysLeft: number;
}

export function certificateView(row: CertificateRow, warningDays: number, now = Date.now()): CertificateView {
  const msLeft = Date.parse(row.validTo) - now;
  const daysLeft = Math.floor(msLeft / DAY_MS);
  const status =
    row.status === 'replaced'
      ? 'replaced'
      : msLeft <= 0
        ? 'expired'
        : daysLeft < warningDays
          ? `expires in ${daysLeft} day${daysLeft === 1 ? '' : 's'}`
          : 'valid';
  return { row, status, daysLeft };
}

/**
 * A tenant's entries (or every tenant's), soonest expiry first. With `expiringInDays`, only the
 * current ones expiring within that many days, and the expired ones always.
 */
export async function listCertificates(
  deps: Pick<CertDeps, 'certificates'>,
  opts: { tenant?: string; expiringInDays?: number; warningDays: number },
  now = Date.now(),
): Promise<CertificateView[]> {
  if (opts.tenant !== undefined) assertName('tenant', opts.tenant);
  const views = (await deps.certificates.list(opts.tenant)).map((r) => certificateView(r, opts.warningDays, now));
  if (opts.expiringInDays === undefined) return views;
  const horizon = now + opts.expiringInDays * DAY_MS;
  return views.filter((v) => v.row.status === 'current' && Date.parse(v.row.validTo) <= horizon);
}

/** Every tenant's entries, soonest expiry first, their status judged by the `cert_warning_days` setting in force. */
export async function listCertificatesAsConfigured(
  deps: Pick<CertDeps, 'certificates'> & { readonly settings: SettingsStore },
  now = Date.now(),
): Promise<CertificateView[]> {
  return listCertificates(deps, { warningDays: await deps.settings.get('cert_warning_days') }, now);
}

/** The current entry then the retired ones, newest first. */
export async function showCertificate(
  deps: Pick<CertDeps, 'certificates'>,
  tenant: string,
  name: string,
  warningDays: number,
  now = Date.now(),
): Promise<CertificateView[]> {
  assertName('tenant', tenant);
  assertName('certificate name', name);
  const history = await deps.certificates.history(tenant, name);
  if (history.length === 0)
    throw new SvcError(
      'SVC_ERR_NOT_FOUND',
      `no certificate "${name}" for tenant ${tenant}; see svc cert list --tenant ${tenant}`,
    );
  return [...history.filter((r) => r.status === 'current'), ...history.filter((r) => r.status !== 'current')].map((r) =>
    certificateView(r, warningDays, now),
  );
}

/** One finding of `svc cert reconcile`. */
export interface ReconcileFinding {
  readonly verdict:
    | 'registered and in use'
    | 'NOT REGISTERED'
    | 'UNREADABLE'
    | 'REGISTERED BUT NOT REFERENCED'
    | 'could not be scanned';
  readonly tenant: string;
  /** The flow (and step) referencing the path, when a path is concerned. */
  readonly where?: string;
  readonly key?: 'tls_client_cert' | 'tls_client_key' | 'tls_ca_cert';
  readonly path?: string;
  /** The registered certificate concerned, when one is. */
  readonly certificate?: string;
  readonly detail?: string;
}

/** What reconcile needs from the node: the flows' latest IR, and reading a path (throws when unreadable). */
export interface ReconcileSources {
  readonly flows: readonly { tenant: string; flow: string; ir?: FlowIR; error?: string }[];
  readFile(path: string): string;
}

/**
 * Read-only. For each TLS path the latest flows reference, on this node: unreadable, or a
 * certificate registered for the tenant (by fingerprint), or not registered; a key file is reported
 * only when it cannot be read. Then each current registered certificate no flow references.
 */
export async function reconcileCertificates(
  deps: Pick<CertDeps, 'certificates'>,
  sources: ReconcileSources,
  tenant?: string,
): Promise<ReconcileFinding[]> {
  const findings: ReconcileFinding[] = [];
  const used = new Set<number>();
  const current = (await deps.certificates.list(tenant)).filter((r) => r.status === 'current');
  for (const f of sources.flows) {
    if (tenant !== undefined && f.tenant !== tenant) continue;
    if (f.ir === undefined) {
      findings.push({ verdict: 'could not be scanned', tenant: f.tenant, where: f.flow, detail: f.error });
      continue;
    }
    for (const step of [...f.ir.steps, ...(f.ir.fault?.steps ?? [])]) {
      const http = step.http;
      if (http === undefined) continue;
      for (const [key, path] of [
        ['tls_client_cert', http.tlsClientCert],
        ['tls_client_key', http.tlsClientKey],
        ['tls_ca_cert', http.tlsCaCert],
      ] as const) {
        if (path === undefined) continue;
        const where = `${f.flow} step '${step.name}'`;
        let text: string;
        try {
          text = sources.readFile(path);
        } catch (err) {
          findings.push({ verdict: 'UNREADABLE', tenant: f.tenant, where, key, path, detail: (err as Error).message });
          continue;
        }
        // A private key is never registered: its path is only checked for readability.
        if (key === 'tls_client_key') continue;
        let fingerprint: string;
        try {
          fingerprint = new X509Certificate(text).fingerprint256;
        } catch (err) {
          findings.push({
            verdict: 'UNREADABLE',
            tenant: f.tenant,
            where,
            key,
            path,
            detail: `not a certificate: ${(err as Error).message}`,
          });
          continue;
        }
        const match = current.find((r) => r.tenant === f.tenant && r.sha256 === fingerprint);
        if (match === undefined)
          findings.push({
            verdict: 'NOT REGISTERED',
            tenant: f.tenant,
            where,
            key,
            path,
            detail: `sha256 ${fingerprint}; register it with svc cert add ${path} --tenant ${f.tenant} --name <name>`,
          });
        else {
          used.add(match.id);
          findings.push({
            verdict: 'registered and in use',
            tenant: f.tenant,
            where,
            key,
            path,
            certificate: match.name,
          });
        }
      }
    }
  }
  for (const r of current)
    if (!used.has(r.id))
      findings.push({
        verdict: 'REGISTERED BUT NOT REFERENCED',
        tenant: r.tenant,
        certificate: r.name,
        detail: `sha256 ${r.sha256}`,
      });
  return findings;
}

/**
 * `svc cert reconcile`: the latest version of every deployed flow, read through the storage
 * contract (the SQLite registry or the PostgreSQL store), against the registered certificates. An
 * artifact that fails its integrity check is a `could not be scanned` finding.
 */
export async function reconcileDeployedFlows(
  deps: Pick<CertDeps, 'certificates'> & { readonly artifacts: LatestArtifactReads },
  readFile: ReconcileSources['readFile'],
  tenant?: string,
): Promise<ReconcileFinding[]> {
  const scan = await scanLatestArtifacts(deps.artifacts);
  const flows = [
    ...scan.flows.map((ir) => ({ tenant: ir.tenant, flow: ir.flow, ir })),
    ...scan.unreadable.map((u) => ({ tenant: u.tenant, flow: u.flow, error: u.error })),
  ];
  return reconcileCertificates(deps, { flows, readFile }, tenant);
}

/** True when every finding is in order (the command's exit status). */
export function reconcileInOrder(findings: readonly ReconcileFinding[]): boolean {
  return findings.every((f) => f.verdict === 'registered and in use');
}

/** One sweep event: a current certificate inside the warning window, or expired. */
export interface SweepEvent {
  readonly event: 'cert_expiring' | 'cert_expired';
  readonly row: CertificateRow;
  readonly daysLeft: number;
}

/** The sweep's findings over every current certificate (the caller emits them once per installation). */
export async function sweepCertificates(
  deps: Pick<CertDeps, 'certificates'>,
  warningDays: number,
  now = Date.now(),
): Promise<SweepEvent[]> {
  const out: SweepEvent[] = [];
  for (const r of await deps.certificates.list()) {
    if (r.status !== 'current') continue;
    const v = certificateView(r, warningDays, now);
    if (v.status === 'expired') out.push({ event: 'cert_expired', row: r, daysLeft: v.daysLeft });
    else if (v.status !== 'valid') out.push({ event: 'cert_expiring', row: r, daysLeft: v.daysLeft });
  }
  return out;
}

/** `svc audit --tenant <t> [-l N] [--verify]`: a tenant's audit chain, read from audit.db beside --db. */
import { Command, Option } from 'commander';
import { DEFAULT_AUDIT_LIMIT, latestAuditEntries, verifyAuditChain } from '../app/use-cases/audit.js';
import { ExitError } from '../common/errors.js';
import { defaultDbPath } from '../common/paths.js';
import { addStoreOptions, intArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description("show a tenant's latest audit entries, or verify its hash chain (exit 1 when broken)")
    .addOption(tenantOption('tenant whose chain to read', { required: true }))
    .addOption(
      new Option('-l, --limit <n>', 'entries to show').default(DEFAULT_AUDIT_LIMIT).argParser(intArg('--limit', 1)),
    )
    .addOption(new Option('--verify', 'recompute the whole chain and report the first broken entry'))
    .addOption(new Option('--json', 'print JSON'))
    .action(auditCommand);
  addStoreOptions(
    audit,
    new Option('--db <path>', 'registry database; audit.db beside it is read').default(
      defaultDbPath(),
      '~/.svc/registry.db, so ~/.svc/audit.db',
    ),
  );
}

export interface AuditOptions extends StoreFlags {
  tenant: string;
  limit: number;
  verify?: boolean;
  json?: boolean;
}

export async function auditCommand(opts: AuditOptions): Promise<void> {
  if (opts.verify) {
    await verify(opts);
    return;
  }
  // A missing audit.db lists nothing and is not created.
  const listing = await withStore(
    opts,
    async (s) => (!s.has('audit') ? { entries: [], total: 0 } : latestAuditEntries(s.audit, opts.tenant, opts.limit)),
    {
      readOnly: true,
    },
  );
  if (opts.json) {
    out(
      JSON.stringify(
        listing.entries.map((e) => ({
          seq: e.seq,
          event_type: e.eventType,
          created_at: e.createdAt,
          correlation_id: e.correlationId,
          payload: JSON.parse(e.payload) as unknown,
        })),
        null,
        2,
      ),
    );
    return;
  }
  if (listing.entries.length === 0) {
    out(`No audit entries for tenant ${opts.tenant}.`);
    return;
  }
  out(
    formatTable(
      ['SEQ', 'EVENT_TYPE', 'CREATED_AT', 'CORRELATION_ID'],
      listing.entries.map((e) => [String(e.seq), e.eventType, e.createdAt, e.correlationId]),
    ),
  );
  if (listing.total > listing.entries.length)
    out(`(latest ${listing.entries.length} of ${listing.total} entries; -l <n> shows more)`);
}

async function verify(opts: AuditOptions): Promise<void> {
  const result = await withStore(
    opts,
    async (s) => (!s.has('audit') ? undefined : verifyAuditChain(s.audit, opts.tenant)),
    { readOnly: true },
  );
  if (opts.json) {
    const r = result ?? { ok: true, tenant: opts.tenant, count: 0, headHash: undefined };
    out(
      JSON.stringify(
        r.ok
          ? { ok: true, tenant: r.tenant, count: r.count, head_hash: r.headHash }
          : { ok: false, tenant: r.tenant, count: r.count, broken_seq: r.brokenSeq, reason: r.reason },
        null,
        2,
      ),
    );
  } else if (result === undefined || result.ok) {
    const count = result?.count ?? 0;
    const head = result?.ok && count > 0 ? `, head ${result.headHash}` : '';
    out(`audit chain of tenant ${opts.tenant}: OK (${count} ${count === 1 ? 'entry' : 'entries'} verified${head})`);
  } else {
    out(
      `audit chain of tenant ${opts.tenant}: BROKEN at seq ${result.brokenSeq}: ${result.reason} (${result.count} entries verified before it)`,
    );
  }
  if (result !== undefined && !result.ok) throw new ExitError(1, '');
}

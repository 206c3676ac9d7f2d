/** `svc audit --tenant <t> [-l N] [--verify]`: a tenant's audit chain, read from audit.db beside --db. */
import { Command, Option } from 'commander';
import {
  chainHeldReceipts,
  checkQueueEntries,
  PLATFORM_CHAIN,
  DEFAULT_AUDIT_LIMIT,
  auditEntriesPage,
  latestAuditEntries,
  verifyAuditChain,
  type QueueEntryCheck,
  type QueueIdsWithout,
} from '../app/use-cases/audit.js';
import { ExitError } from '../common/errors.js';
import type { AuditEntry } from '../store/contracts/index.js';
import { defaultDbPath } from '../common/paths.js';
import { addStoreOptions, intArg, type StoreFlags, tenantOption } from './options.js';
import { recoverAuditSpools } from '../store/audit/audit-spool.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

export function registerAudit(program: Command): void {
  const audit = program
    .command('audit')
    .description(
      "show a tenant's latest audit entries, or verify its hash chain (exit 1 when broken); --platform, the chain of the platform settings",
    )
    .addOption(tenantOption('tenant whose chain to read'))
    .addOption(
      new Option('--platform', "read the platform's chain (settings changes) instead of a tenant's").conflicts(
        'tenant',
      ),
    )
    .addOption(
      new Option('-l, --limit <n>', 'entries to show').default(DEFAULT_AUDIT_LIMIT).argParser(intArg('--limit', 1)),
    )
    .addOption(
      new Option(
        '--verify',
        'recompute the whole chain and report the first broken entry; check that every queued message and delivery has its entry',
      ),
    )
    .addOption(new Option('--event-type <type>', 'only entries of this event type (one the chain holds)'))
    .addOption(new Option('--actor <who>', 'only entries whose payload names this actor (cli, ui:alice, seed)'))
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
  tenant?: string;
  platform?: boolean;
  limit: number;
  verify?: boolean;
  eventType?: string;
  actor?: string;
  json?: boolean;
}

/** The chain read: the tenant's, or the platform's. */
interface Chain {
  readonly name: string;
  /** For messages: "tenant acme", "the platform". */
  readonly label: string;
  readonly isTenant: boolean;
}

function chainOf(opts: AuditOptions): Chain {
  if (opts.platform) return { name: PLATFORM_CHAIN, label: 'the platform', isTenant: false };
  if (opts.tenant === undefined)
    throw new ExitError(1, "error: say whose chain: --tenant <t>, or --platform for the platform's");
  return { name: opts.tenant, label: `tenant ${opts.tenant}`, isTenant: true };
}

export async function auditCommand(opts: AuditOptions): Promise<void> {
  const chain = chainOf(opts);
  if (opts.verify) {
    await verify(opts, chain);
    return;
  }
  const filtered = opts.eventType !== undefined || opts.actor !== undefined;
  // A missing audit.db lists nothing and is not created.
  const listing = await withStore(
    opts,
    async (s): Promise<{ entries: readonly AuditEntry[]; total: number; more?: boolean }> => {
      if (!s.has('audit')) return { entries: [], total: 0 };
      if (!filtered) return latestAuditEntries(s.audit, chain.name, opts.limit);
      // The Audit page's reader, oldest first as this command prints.
      const page = await auditEntriesPage(
        s.audit,
        chain.name,
        { event_type: opts.eventType, actor: opts.actor },
        { limit: opts.limit },
      );
      return { entries: [...page.entries].reverse(), total: page.total, more: page.olderBefore !== undefined };
    },
    { readOnly: true },
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
    out(`No audit entries for ${chain.label}.`);
    return;
  }
  out(
    formatTable(
      ['SEQ', 'EVENT_TYPE', 'CREATED_AT', 'CORRELATION_ID'],
      listing.entries.map((e) => [String(e.seq), e.eventType, e.createdAt, e.correlationId]),
    ),
  );
  if (filtered) {
    if (listing.more === true) out(`(latest ${listing.entries.length} matching entries; -l <n> shows more)`);
  } else if (listing.total > listing.entries.length)
    out(`(latest ${listing.entries.length} of ${listing.total} entries; -l <n> shows more)`);
}

async function verify(opts: AuditOptions, chain: Chain): Promise<void> {
  const checked = await withStore(
    opts,
    async (s) => {
      if (!s.has('audit')) return undefined;
      // What a server killed before chaining left in its spool is chained first, as a server start does.
      const spooled = s.kind === 'sqlite' ? recoverAuditSpools(s.paths.auditSpoolDir, s.audit) : undefined;
      // And the receipts its queues' records carry that it did not chain, as their workers would.
      const fromRecords = chain.isTenant ? await chainHeldReceipts(s.queues, () => s.audit, chain.name) : 0;
      return {
        spooled,
        fromRecords,
        chain: await verifyAuditChain(s.audit, chain.name),
        // The platform has no queues.
        queues: chain.isTenant ? await checkQueueEntries(s.audit, s.queues, chain.name) : undefined,
      };
    },
    { readOnly: true },
  );
  if (checked?.spooled !== undefined && checked.spooled.entries > 0 && opts.json !== true)
    out(
      `chained first: ${checked.spooled.entries} audit entries left spooled by ${checked.spooled.spools} stopped server process(es)`,
    );
  if (checked !== undefined && checked.fromRecords > 0 && opts.json !== true)
    out(
      `chained first: ${checked.fromRecords} queue.message.enqueued entries carried by the records of acknowledged messages (their server stopped before chaining them)`,
    );
  const result = checked?.chain;
  const queues = checked?.queues;
  if (opts.json) {
    const r = result ?? { ok: true, tenant: chain.name, count: 0, headHash: undefined };
    const q = queues === undefined ? undefined : queueJson(queues);
    out(
      JSON.stringify(
        r.ok
          ? { ok: queues?.ok ?? true, tenant: r.tenant, count: r.count, head_hash: r.headHash, queues: q }
          : { ok: false, tenant: r.tenant, count: r.count, broken_seq: r.brokenSeq, reason: r.reason, queues: q },
        null,
        2,
      ),
    );
  } else {
    if (result === undefined || result.ok) {
      const count = result?.count ?? 0;
      const head = result?.ok && count > 0 ? `, head ${result.headHash}` : '';
      out(`audit chain of ${chain.label}: OK (${count} ${count === 1 ? 'entry' : 'entries'} verified${head})`);
    } else {
      out(
        `audit chain of ${chain.label}: BROKEN at seq ${result.brokenSeq}: ${result.reason} (${result.count} entries verified before it)`,
      );
    }
    if (queues !== undefined) out(queueLine(chain.name, queues));
  }
  if ((result !== undefined && !result.ok) || (queues !== undefined && !queues.ok)) throw new ExitError(1, '');
}

/** At most this many ids are named per queue. */
const IDS_SHOWN = 10;

function idList(without: readonly QueueIdsWithout[]): string {
  return without
    .map(
      (w) =>
        `${w.flow}: ${w.ids.slice(0, IDS_SHOWN).join(', ')}${w.ids.length > IDS_SHOWN ? `, and ${w.ids.length - IDS_SHOWN} more` : ''}`,
    )
    .join('; ');
}

function queueLine(tenant: string, q: QueueEntryCheck): string {
  if (q.ok)
    return `queue entries of tenant ${tenant}: OK (${q.held} held ${q.held === 1 ? 'message' : 'messages'} and ${q.deliveries} ${q.deliveries === 1 ? 'delivery' : 'deliveries'}, each with the entry of its acknowledgement)`;
  const parts: string[] = [];
  const heldMissing = q.heldWithout.reduce((n, w) => n + w.ids.length, 0);
  const deliveriesMissing = q.deliveriesWithout.reduce((n, w) => n + w.ids.length, 0);
  if (heldMissing > 0)
    parts.push(
      `${heldMissing} of ${q.held} held messages have no queue.message.enqueued entry (${idList(q.heldWithout)})`,
    );
  if (deliveriesMissing > 0)
    parts.push(
      `${deliveriesMissing} of ${q.deliveries} deliveries are of a message without one (${idList(q.deliveriesWithout)})`,
    );
  return `queue entries of tenant ${tenant}: MISSING: ${parts.join('; ')}`;
}

function queueJson(q: QueueEntryCheck): Record<string, unknown> {
  return {
    ok: q.ok,
    held: q.held,
    held_without_entry: q.heldWithout,
    deliveries: q.deliveries,
    deliveries_without_entry: q.deliveriesWithout,
  };
}

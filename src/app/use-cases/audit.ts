/**
 * Audit trail use cases: the latest entries of a tenant's chain and a full verification.
 *
 * Correlation ids: an entry written without one gets a fresh UUID v4 (never an empty string), so
 * each operator command's entry can be found on its own; request-path entries carry the request's
 * correlation id.
 */
import { SvcError } from '../../common/errors.js';
import type { QueueStore } from '../../queue/index.js';
import type { AuditStore, AuditEntry, AuditVerifyResult } from '../../store/contracts/index.js';
import { assertName } from './tenants.js';

/**
 * The chain of what belongs to no tenant (platform settings): a name the name rule refuses to every
 * tenant (names start with a letter or digit), so it can never be one tenant's chain.
 */
export const PLATFORM_CHAIN = '_platform';

/** A tenant's name, or the platform's chain. */
function assertChain(chain: string): void {
  if (chain !== PLATFORM_CHAIN) assertName('tenant', chain);
}

/** `svc audit` shows this many entries unless `-l` says otherwise. */
export const DEFAULT_AUDIT_LIMIT = 20;

export interface AuditListing {
  /** The newest entries, oldest of them first. */
  readonly entries: readonly AuditEntry[];
  /** Entries in the whole chain. */
  readonly total: number;
}

export async function latestAuditEntries(
  audit: AuditStore,
  tenant: string,
  limit: number = DEFAULT_AUDIT_LIMIT,
): Promise<AuditListing> {
  assertChain(tenant);
  if (!Number.isInteger(limit) || limit < 1)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the limit must be a whole number of at least 1, got ${limit}`);
  return { entries: await audit.latest(tenant, limit), total: await audit.count(tenant) };
}

/** Entries one Audit page lists. */
export const AUDIT_PAGE_ENTRIES = 100;
/** Longest actor a filter may name, in characters. */
const ACTOR_MAX = 128;

/** The filter of an Audit page as a form or a command line carries it: text, each optional, empty meaning "any". */
export interface AuditFilterText {
  /** An event type the chain holds. */
  readonly event_type?: string;
  /** Who did it, as the entries record it in their payload's `actor` (`cli`, `ui:alice`, `seed`, `svc dev`). */
  readonly actor?: string;
  /** The paging cursor: only entries with a smaller seq. */
  readonly before?: string;
}

export interface AuditPage {
  /** Newest first. */
  readonly entries: readonly AuditEntry[];
  /** Entries in the whole chain, whatever the filter. */
  readonly total: number;
  /** The cursor of the next (older) page; undefined when this page reaches the oldest matching entry. */
  readonly olderBefore?: number;
}

/** The event types a chain holds, for a filter's choices. */
export async function auditEventTypes(audit: AuditStore, chain: string): Promise<string[]> {
  assertChain(chain);
  return audit.eventTypes(chain);
}

/**
 * One page of a chain, newest first, filtered by event type and actor in the store; older pages
 * by the `before` cursor. Every filter value is checked, and all refusals given at once.
 * @param eventTypes the chain's event types when the caller has read them already
 * @throws SvcError SVC_ERR_INVALID_INPUT naming each refused field and what it accepts
 */
export async function auditEntriesPage(
  audit: AuditStore,
  chain: string,
  text: AuditFilterText,
  opts: { limit?: number; eventTypes?: readonly string[] } = {},
): Promise<AuditPage> {
  assertChain(chain);
  const limit = opts.limit ?? AUDIT_PAGE_ENTRIES;
  const problems: string[] = [];
  const given = (v: string | undefined): string | undefined =>
    v === undefined || v.trim() === '' ? undefined : v.trim();
  const eventType = given(text.event_type);
  if (eventType !== undefined) {
    const types = opts.eventTypes ?? (await audit.eventTypes(chain));
    if (!types.includes(eventType))
      problems.push(
        `event type "${eventType}" is not in the chain of ${chain}; it holds ${types.length === 0 ? 'no entries' : types.join(', ')}`,
      );
  }
  const actor = given(text.actor);
  if (actor !== undefined && (actor.length > ACTOR_MAX || /[\u0000-\u001f\u007f]/.test(actor)))
    problems.push(
      `actor must be who the entries name, up to ${ACTOR_MAX} characters without control characters (cli, ui:alice, seed)`,
    );
  const before = given(text.before);
  if (before !== undefined && !/^[1-9]\d{0,15}$/.test(before))
    problems.push(`before must be an entry's seq (a whole number of at least 1), got "${before}"`);
  if (problems.length > 0) throw new SvcError('SVC_ERR_INVALID_INPUT', problems.join('; '));
  // One more than shown: whether an older page exists, without a count of the matches.
  const rows = await audit.page(chain, {
    beforeSeq: before === undefined ? undefined : Number(before),
    eventType,
    actor,
    limit: limit + 1,
  });
  const entries = rows.slice(0, limit);
  return {
    entries,
    total: await audit.count(chain),
    olderBefore: rows.length > limit ? entries.at(-1)!.seq : undefined,
  };
}

/** Recomputes the tenant's whole chain; `ok: false` names the first broken seq and why. */
export async function verifyAuditChain(audit: AuditStore, tenant: string): Promise<AuditVerifyResult> {
  assertChain(tenant);
  return audit.verify(tenant);
}

export { chainHeldReceipts } from '../runtime/queue-receipts.js';

/** Entries that stand for a message put on a queue: `/enqueue`, `queue_publish`, a compensation, a dead letter replayed. */
const RECEIPTS = new Map([
  ['queue.message.enqueued', 'id'],
  ['queue.message.replayed', 'new_id'],
]);
/** Entries that stand for a delivery of a queued message. */
const DELIVERIES = ['queue.message.processed', 'queue.message.failed'];
/** Entries read per page by the check. */
const CHECK_PAGE = 5000;

/** Ids of one queue that lack an entry. */
export interface QueueIdsWithout {
  readonly flow: string;
  readonly ids: readonly number[];
}

/** What `svc audit --verify` counts besides the chain: every message and delivery has its entry. */
export interface QueueEntryCheck {
  readonly ok: boolean;
  /** Messages the tenant's queues hold (waiting, retrying, delivered and not compacted yet, dead letters). */
  readonly held: number;
  /** Of them, those without a `queue.message.enqueued` (or `queue.message.replayed`) entry. */
  readonly heldWithout: readonly QueueIdsWithout[];
  /** `queue.message.processed` and `queue.message.failed` entries. */
  readonly deliveries: number;
  /** Of them, those of a message with no `queue.message.enqueued` (or `replayed`) entry. */
  readonly deliveriesWithout: readonly QueueIdsWithout[];
}

/**
 * Counts the tenant's queue entries against what they stand for (issue 33: an acknowledgement
 * whose entry a crash lost used to leave a chain that verified): every message its queues hold
 * has the entry of its acknowledgement, and every delivery entry is of a message that has one.
 * Reads the tenant's queue entries page by page and every queue of the tenant whole.
 */
export async function checkQueueEntries(
  audit: AuditStore,
  queues: QueueStore,
  tenant: string,
): Promise<QueueEntryCheck> {
  assertName('tenant', tenant);
  const receipts = new Map<string, Set<number>>();
  const delivered: { flow: string; id: number }[] = [];
  const types = [...RECEIPTS.keys(), ...DELIVERIES];
  for (let after = 0; ;) {
    const page = await audit.entriesOfTypes(tenant, types, after, CHECK_PAGE);
    for (const e of page) {
      const p = parsePayload(e.payload);
      const idKey = RECEIPTS.get(e.eventType);
      const id = p?.[idKey ?? 'id'];
      if (typeof p?.flow !== 'string' || typeof id !== 'number') continue;
      if (idKey === undefined) delivered.push({ flow: p.flow, id });
      else {
        let ids = receipts.get(p.flow);
        if (ids === undefined) receipts.set(p.flow, (ids = new Set()));
        ids.add(id);
      }
    }
    if (page.length < CHECK_PAGE) break;
    after = page.at(-1)!.seq;
  }
  let held = 0;
  const heldWithout: QueueIdsWithout[] = [];
  for (const q of await queues.listQueues()) {
    if (q.tenant !== tenant) continue;
    const ids = await queues.heldIds(tenant, q.flow);
    held += ids.length;
    const without = ids.filter((id) => !receipts.get(q.flow)?.has(id));
    if (without.length > 0) heldWithout.push({ flow: q.flow, ids: without });
  }
  const byFlow = new Map<string, number[]>();
  for (const d of delivered) {
    if (receipts.get(d.flow)?.has(d.id)) continue;
    let ids = byFlow.get(d.flow);
    if (ids === undefined) byFlow.set(d.flow, (ids = []));
    ids.push(d.id);
  }
  const deliveriesWithout = [...byFlow].map(([flow, ids]) => ({ flow, ids: [...new Set(ids)] }));
  return {
    ok: heldWithout.length === 0 && deliveriesWithout.length === 0,
    held,
    heldWithout,
    deliveries: delivered.length,
    deliveriesWithout,
  };
}

function parsePayload(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

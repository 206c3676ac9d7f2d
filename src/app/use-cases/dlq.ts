/** Dead-letter use cases shared by `svc dlq` and the management UI, plus the queue figures the UI shows. */
import { GLOBAL_MASK, maskPayload, type MaskSet } from '../../common/mask.js';
import type { DeadLetter, DeadLetterRow, QueueStore, QueueStats, ReplayResult } from '../../queue/index.js';
import type { AuditEntryInput } from '../../store/contracts/index.js';
import type { QueueWait } from '../runtime/queue-pool.js';

/** Who acted, for the audit entry every replay and discard writes on the queue's tenant chain. */
export interface DlqAction {
  /** The queued writer of a server, or an audit store (awaited: on PostgreSQL the append is a promise). */
  readonly audit: { append(entry: AuditEntryInput): unknown };
  /** e.g. `cli`, `ui:alice` */
  readonly actor: string;
}

/**
 * Where the queues are: the queue backend of an opened store (storage/openStore), a running
 * server's or an operator command's.
 */
export interface DlqTarget {
  readonly store: QueueStore;
  /** In a server: the queues waiting for a worker's slot of its pool (QueueWorkers.waiting). */
  readonly waiting?: () => readonly QueueWait[];
  /** The log mask of a queue's flow (its `log_extra_mask_fields` and the global list). @default the global list */
  readonly maskFor?: (tenant: string, flow: string) => MaskSet;
}

function withStore<T>(target: DlqTarget, fn: (store: QueueStore) => Promise<T>): Promise<T> {
  return fn(target.store);
}

/** Pending dead letters, optionally narrowed to a tenant and/or flow. */
export function listDeadLetters(
  target: DlqTarget,
  filter: { tenant?: string; flow?: string } = {},
): Promise<DeadLetterRow[]> {
  return withStore(target, async (store) => {
    if (filter.tenant !== undefined && filter.flow !== undefined) store.checkNames(filter.tenant, filter.flow);
    return store.listDeadLetters(filter);
  });
}

/**
 * Pending dead letters as a page shows them: each payload through its flow's log mask, as every
 * payload the event log keeps (a `password` is `***` here too, for every role).
 */
export async function deadLettersToShow(
  target: DlqTarget,
  filter: { tenant?: string; flow?: string } = {},
): Promise<DeadLetterRow[]> {
  const maskFor = target.maskFor ?? (() => GLOBAL_MASK);
  return (await listDeadLetters(target, filter)).map((d) => ({
    ...d,
    payload: maskPayload(d.payload, maskFor(d.tenant, d.flow)),
  }));
}

/**
 * Replays a pending dead letter as a new message (new id, fresh attempts and correlation id);
 * audited as `queue.message.replayed`.
 */
export function replayDeadLetter(
  target: DlqTarget,
  tenant: string,
  flow: string,
  id: number,
  action: DlqAction,
): Promise<ReplayResult> {
  return withStore(target, async (store) => {
    const r = await store.replayDeadLetter(tenant, flow, id);
    await action.audit.append({
      tenant,
      eventType: 'queue.message.replayed',
      correlationId: r.message.correlationId,
      payload: { flow, id, new_id: r.message.id, actor: action.actor },
    });
    return r;
  });
}

/** Discards a pending dead letter: hidden at once, body removed at the queue's next drain; audited as `queue.message.discarded`. */
export function discardDeadLetter(
  target: DlqTarget,
  tenant: string,
  flow: string,
  id: number,
  action: DlqAction,
): Promise<DeadLetter> {
  return withStore(target, async (store) => {
    const e = await store.discardDeadLetter(tenant, flow, id);
    await action.audit.append({
      tenant,
      eventType: 'queue.message.discarded',
      payload: { flow, id, actor: action.actor },
    });
    return e;
  });
}

/** Replays or discards every pending dead letter matching the filter, one audited action each; returns how many. */
export async function actOnDeadLetters(
  target: DlqTarget,
  how: 'replay' | 'discard',
  filter: { tenant?: string; flow?: string },
  action: DlqAction,
): Promise<number> {
  let n = 0;
  for (const d of await listDeadLetters(target, filter)) {
    if (how === 'replay') await replayDeadLetter(target, d.tenant, d.flow, d.id, action);
    else await discardDeadLetter(target, d.tenant, d.flow, d.id, action);
    n++;
  }
  return n;
}

/** A queue's counters and who runs its worker. */
export interface QueueFigures extends QueueStats {
  /** `pid N on <host>` of the live process holding the queue's consumer lock; undefined: no worker runs. */
  readonly worker: string | undefined;
  /** How long it has waited for a worker's slot with something to deliver (milliseconds); undefined: not waiting in this server. */
  readonly waitingMs?: number;
  /** Retries past their due time with no worker to run them (overdueRetries); undefined: none. */
  readonly overdue?: OverdueRetries;
}

/**
 * How long a retry may be past its due time before it counts as overdue. A running worker takes a
 * due retry within its idle poll (500 ms) or after the delivery in flight; a worker of the pool
 * starts for a queue as soon as a slot is free. Milliseconds.
 */
export const OVERDUE_GRACE_MS = 5_000;

/** The retries of a queue left past their due time with nobody to run them. */
export interface OverdueRetries {
  /** How many retries are due more than the grace ago. */
  readonly count: number;
  /** The due time of the oldest of them (epoch milliseconds). */
  readonly oldestDueMs: number;
}

/**
 * The queue's retries overdue with no worker: those due more than `graceMs` before `nowMs`, when
 * no process runs the queue's worker and it does not wait for a slot of this server's pool (a
 * queue waiting for a slot is served in turn: its Worker cell says how long it has waited).
 * Undefined when there is none, or someone will run them.
 */
export function overdueRetries(
  q: Pick<QueueFigures, 'worker' | 'waitingMs' | 'retries'>,
  nowMs: number,
  graceMs: number = OVERDUE_GRACE_MS,
): OverdueRetries | undefined {
  if (q.worker !== undefined || q.waitingMs !== undefined) return undefined;
  let count = 0;
  let oldestDueMs = Infinity;
  for (const r of q.retries) {
    if (nowMs - r.dueMs <= graceMs) continue;
    count++;
    oldestDueMs = Math.min(oldestDueMs, r.dueMs);
  }
  return count === 0 ? undefined : { count, oldestDueMs };
}

/**
 * Every queue's counters (backlog, retries, dead letters), its worker, how long it waits for one,
 * and its retries overdue with no worker (as of `nowMs`), by tenant and flow; `only` a tenant's, a
 * flow's or one queue's.
 */
export function queueFigures(
  target: DlqTarget,
  nowMs: number = Date.now(),
  only: { readonly tenant?: string; readonly flow?: string } = {},
): Promise<QueueFigures[]> {
  return withStore(target, async (store) => {
    const waits = new Map((target.waiting?.() ?? []).map((w) => [`${w.tenant}/${w.flow}`, w.waitedMs]));
    const out: QueueFigures[] = [];
    for (const { tenant, flow } of await store.listQueues()) {
      if ((only.tenant !== undefined && tenant !== only.tenant) || (only.flow !== undefined && flow !== only.flow))
        continue;
      const waitingMs = waits.get(`${tenant}/${flow}`);
      const figures: QueueFigures = {
        ...(await store.stats(tenant, flow)),
        worker: await store.workerOf(tenant, flow),
        ...(waitingMs === undefined ? {} : { waitingMs }),
      };
      const overdue = overdueRetries(figures, nowMs);
      out.push(overdue === undefined ? figures : { ...figures, overdue });
    }
    return out;
  });
}

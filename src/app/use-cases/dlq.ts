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
}

/** Every queue's counters (backlog, retries, dead letters), its worker, and how long it waits for one, by tenant and flow. */
export function queueFigures(target: DlqTarget): Promise<QueueFigures[]> {
  return withStore(target, async (store) => {
    const waits = new Map((target.waiting?.() ?? []).map((w) => [`${w.tenant}/${w.flow}`, w.waitedMs]));
    const out: QueueFigures[] = [];
    for (const { tenant, flow } of await store.listQueues()) {
      const waitingMs = waits.get(`${tenant}/${flow}`);
      out.push({
        ...(await store.stats(tenant, flow)),
        worker: await store.workerOf(tenant, flow),
        ...(waitingMs === undefined ? {} : { waitingMs }),
      });
    }
    return out;
  });
}

/** Dead-letter use cases shared by `svc dlq` and the management UI, plus the queue figures the UI shows. */
import { statePaths } from '../common/paths.js';
import { QueueStore, type DeadLetter, type DeadLetterRow, type QueueStats, type ReplayResult } from '../queue/index.js';

/**
 * Where the queues are: a registry database path (an operator command opens a short-lived store
 * beside it), or the store a running server already holds.
 */
export type DlqTarget = { readonly db: string } | { readonly store: QueueStore };

async function withStore<T>(target: DlqTarget, fn: (store: QueueStore) => Promise<T>): Promise<T> {
  if ('store' in target) return fn(target.store);
  // Ids are reserved one at a time so a command wastes none.
  const store = new QueueStore({ queuesDir: statePaths(target.db).queuesDir, idBlockSize: 1 });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Pending dead letters, optionally narrowed to a tenant and/or flow. */
export function listDeadLetters(target: DlqTarget, filter: { tenant?: string; flow?: string } = {}): Promise<DeadLetterRow[]> {
  return withStore(target, async (store) => {
    if (filter.tenant !== undefined && filter.flow !== undefined) store.paths(filter.tenant, filter.flow);
    return store.listDeadLetters(filter);
  });
}

/** Replays a pending dead letter as a new message (new id, fresh attempts and correlation id). */
export function replayDeadLetter(target: DlqTarget, tenant: string, flow: string, id: number): Promise<ReplayResult> {
  return withStore(target, (store) => store.replayDeadLetter(tenant, flow, id));
}

/** Discards a pending dead letter: hidden at once, body removed at the queue's next drain. */
export function discardDeadLetter(target: DlqTarget, tenant: string, flow: string, id: number): Promise<DeadLetter> {
  return withStore(target, (store) => store.discardDeadLetter(tenant, flow, id));
}

/** Every queue's counters (backlog, retries, dead letters), by tenant and flow. */
export function queueFigures(target: DlqTarget): Promise<QueueStats[]> {
  return withStore(target, async (store) => {
    const out: QueueStats[] = [];
    for (const { tenant, flow } of await store.listQueues()) out.push(await store.stats(tenant, flow));
    return out;
  });
}

/** Dead-letter use cases shared by `svc dlq` and (later) the HTTP/UI doors. */
import { statePaths } from '../common/paths.js';
import { QueueStore, type DeadLetter, type DeadLetterRow, type ReplayResult } from '../queue/index.js';

export interface DlqTarget {
  /** Registry database; only the `queues/` directory beside it is used. */
  readonly db: string;
}

/** A short-lived store for one command: ids are reserved one at a time so none are wasted. */
function openStore(db: string): QueueStore {
  return new QueueStore({ queuesDir: statePaths(db).queuesDir, idBlockSize: 1 });
}

/** Pending dead letters, optionally narrowed to a tenant and/or flow. */
export async function listDeadLetters(opts: DlqTarget & { tenant?: string; flow?: string }): Promise<DeadLetterRow[]> {
  const store = openStore(opts.db);
  try {
    if (opts.tenant !== undefined && opts.flow !== undefined) store.paths(opts.tenant, opts.flow);
    return await store.listDeadLetters({ tenant: opts.tenant, flow: opts.flow });
  } finally {
    await store.close();
  }
}

/** Replays a pending dead letter as a new message (new id, fresh attempts and correlation id). */
export async function replayDeadLetter(opts: DlqTarget & { tenant: string; flow: string; id: number }): Promise<ReplayResult> {
  const store = openStore(opts.db);
  try {
    return await store.replayDeadLetter(opts.tenant, opts.flow, opts.id);
  } finally {
    await store.close();
  }
}

/** Discards a pending dead letter: hidden at once, body removed at the queue's next drain. */
export async function discardDeadLetter(opts: DlqTarget & { tenant: string; flow: string; id: number }): Promise<DeadLetter> {
  const store = openStore(opts.db);
  try {
    return await store.discardDeadLetter(opts.tenant, opts.flow, opts.id);
  } finally {
    await store.close();
  }
}

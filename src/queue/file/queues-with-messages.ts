/**
 * The queues of a state directory that hold messages (QueueStore.queuesWithMessages), found cheaply
 * enough for a server's start: two stats per queue, and its consumer log read only when the queue
 * holds anything at all; no segment is read past its first record.
 */
import { stat } from 'node:fs/promises';
import type { QueueBacklog } from '../contract.js';
import { listQueueDirs } from './compaction.js';
import { readConsumerState } from './consumer-log.js';
import { isErrno } from './file-io.js';
import { queuePaths, type QueuePaths } from './queue-paths.js';

/** Queues whose segment runs past their checkpoint (messages never delivered) or whose retry schedule is not empty. */
export async function queuesWithMessages(queuesDir: string): Promise<QueueBacklog[]> {
  const out: QueueBacklog[] = [];
  for (const q of await listQueueDirs(queuesDir)) {
    const backlog = await backlogOf(queuePaths(queuesDir, q.tenant, q.flow));
    if (backlog !== undefined) out.push(backlog);
  }
  return out;
}

/** What one queue holds to deliver, as its files say now: undefined when nothing. */
export async function backlogOf(paths: QueuePaths): Promise<QueueBacklog | undefined> {
  const [segmentBytes, logBytes] = await Promise.all([sizeOf(paths.segment), sizeOf(paths.consumerLog)]);
  if (segmentBytes === 0 && logBytes === 0) return undefined;
  // The checkpoint as written (a running worker's may be a little ahead: such a queue has a worker anyway).
  const state = await readConsumerState(paths.consumerLog, paths.segment);
  const { tenant, flow } = paths;
  if (segmentBytes > state.ck.off) return { tenant, flow, readyAt: 0 };
  let readyAt: number | undefined;
  for (const r of state.retries.values()) if (readyAt === undefined || r.due < readyAt) readyAt = r.due;
  return readyAt === undefined ? undefined : { tenant, flow, readyAt };
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return 0;
    throw err;
  }
}

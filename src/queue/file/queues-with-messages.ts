/**
 * The queues of a state directory that hold messages (QueueStore.queuesWithMessages), found cheaply
 * enough for a server's start: two stats per queue, and its consumer log read only when the queue
 * holds anything at all; no segment is read past its first record.
 */
import { stat } from 'node:fs/promises';
import type { QueueName } from '../contract.js';
import { listQueueDirs } from './compaction.js';
import { readConsumerState } from './consumer-log.js';
import { isErrno } from './file-io.js';
import { queuePaths } from './queue-paths.js';

/** Queues whose segment runs past their checkpoint (messages never delivered) or whose retry schedule is not empty. */
export async function queuesWithMessages(queuesDir: string): Promise<QueueName[]> {
  const out: QueueName[] = [];
  for (const q of await listQueueDirs(queuesDir)) {
    const paths = queuePaths(queuesDir, q.tenant, q.flow);
    const [segmentBytes, logBytes] = await Promise.all([sizeOf(paths.segment), sizeOf(paths.consumerLog)]);
    if (segmentBytes === 0 && logBytes === 0) continue;
    // The checkpoint as written (a running worker's may be a little ahead: such a queue has a worker anyway).
    const state = await readConsumerState(paths.consumerLog, paths.segment);
    if (state.retries.size > 0 || segmentBytes > state.ck.off) out.push(q);
  }
  return out;
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return 0;
    throw err;
  }
}

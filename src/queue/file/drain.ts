/** Draining an empty queue: the segment is emptied in place and the consumer log starts over. */
import { open } from 'node:fs/promises';
import { isErrno } from './file-io.js';
import { EMPTY_CHECKPOINT, type ConsumerLog, type ConsumerState } from './consumer-log.js';
import { pruneDeadLetters } from './dead-letters.js';
import { LockFile } from '../coordination/lock-file.js';
import { writeLockOptions, type QueuePaths } from './queue-paths.js';

/**
 * Empties the segment when every record has been delivered once (the checkpoint is at its end),
 * then rewrites the consumer log and the dead-letter file (dropping handled entries). Call only
 * as the consumer-lock holder, between deliveries. Returns true when the queue was drained.
 *
 * Pending retries do not hold the segment: each retry entry carries its message (payload, ids,
 * trace context) in the consumer log, which the rewrite keeps. Before, one message retrying for
 * hours kept every record appended meanwhile on disk, processed or not.
 *
 * Crash safety: the truncation happens first; a consumer log still naming the old checkpoint is
 * recognised on open because its first-record id no longer matches the segment, and its retry
 * entries are the same before and after the rewrite.
 */
export async function drainIfEmpty(paths: QueuePaths, log: ConsumerLog, state: ConsumerState): Promise<boolean> {
  const lock = await LockFile.acquire(paths.appendLock, writeLockOptions(paths));
  let drained = false;
  try {
    let fh;
    try {
      fh = await open(paths.segment, 'r+');
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    if (fh) {
      try {
        const size = (await fh.stat()).size;
        if (size === state.ck.off) {
          if (size > 0) {
            // Fenced: had this process paused past the lease, an append acknowledged since by
            // another would be cut away.
            lock.assertHeldSync();
            await fh.truncate(0);
            await fh.datasync();
          }
          drained = true;
        }
      } finally {
        await fh.close();
      }
    } else drained = state.ck.off === 0;
  } finally {
    await lock.release();
  }
  if (!drained) return false;
  state.ck = EMPTY_CHECKPOINT;
  await log.rewrite(state);
  await pruneDeadLetters(paths);
  return true;
}

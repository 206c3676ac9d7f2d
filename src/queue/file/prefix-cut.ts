/**
 * Giving back the processed prefix of a segment that never empties. A drain (drain.ts) frees a
 * segment only once every record has been delivered; a queue whose worker always lags a little
 * behind its producers kept every record ever appended. The cut copies what is not yet delivered
 * (the tail from the checkpoint) to a new file under the append lock, swaps it in by rename, then
 * rewrites the consumer log with a checkpoint at 0.
 *
 * Crash safety, in the order of the steps:
 * - before the rename: the old segment and consumer log are untouched (a stray temp file is
 *   removed by the next cut);
 * - after the rename (directory synced) and before the consumer log is rewritten: the log's
 *   checkpoint names the old first record, which the new segment does not start with (ids are
 *   never reissued), so it is reset to 0 on open: exactly the tail, which was the durable
 *   checkpoint's position (callers sync the checkpoint first). Nothing is lost or delivered twice;
 * - the rename comes before the log rewrite: the other order, interrupted, would leave a
 *   checkpoint at 0 of the new file over the old segment, and reset it to 0: every processed record
 *   delivered again.
 * Appenders (in any process) re-check the segment's inode each time they take the append lock
 * and re-open the new file; offsets they return afterwards are positions in the new file.
 */
import { readdir, unlink, open } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite, isErrno, readAt } from './file-io.js';
import { decodeFrames } from './frame.js';
import type { ConsumerLog, ConsumerState } from './consumer-log.js';
import { LockFile } from '../coordination/lock-file.js';
import { writeLockOptions, type QueuePaths } from './queue-paths.js';
import type { SegmentRecord } from './segment-record.js';

export interface PrefixCutOptions {
  /** The processed prefix must be at least this long to be cut. Bytes. @default 64 MiB */
  readonly minPrefixBytes?: number;
  /**
   * The tail copied under the append lock (appends wait meanwhile) must be at most this long;
   * a longer one is left for a later pass, when the worker has caught up further. Bytes. @default 8 MiB
   */
  readonly maxTailBytes?: number;
}

export const DEFAULT_MIN_PREFIX_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_TAIL_BYTES = 8 * 1024 * 1024;

/**
 * Cuts the processed prefix (everything before the checkpoint) off the segment when it is worth
 * it; returns the bytes cut, 0 when nothing was done. Call only as the consumer-lock holder,
 * between deliveries, with the checkpoint in `state` durable. On return with a cut, `state.ck` is
 * at 0 of the new file (its first record's id, n 0: the processed count starts over, as at a drain)
 * and the consumer log is rewritten.
 */
export async function cutProcessedPrefix(
  paths: QueuePaths,
  log: ConsumerLog,
  state: ConsumerState,
  opts: PrefixCutOptions = {},
): Promise<number> {
  const cut = state.ck.off;
  if (cut < (opts.minPrefixBytes ?? DEFAULT_MIN_PREFIX_BYTES)) return 0;
  const lock = await LockFile.acquire(paths.appendLock, writeLockOptions(paths));
  let firstId: number;
  try {
    let fh;
    try {
      fh = await open(paths.segment, 'r');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return 0;
      throw err;
    }
    let tail: Buffer;
    try {
      const size = (await fh.stat()).size;
      if (size <= cut || size - cut > (opts.maxTailBytes ?? DEFAULT_MAX_TAIL_BYTES)) return 0;
      tail = await readAt(fh, cut, size - cut);
    } finally {
      await fh.close();
    }
    // Only whole records are carried over: no write is in progress under the lock, so anything
    // after them is a tail torn by a writer that died (cut off as the tail repair would).
    const decoded = decodeFrames<SegmentRecord>(tail);
    if (decoded.frames.length === 0) return 0;
    firstId = decoded.frames[0]!.value.id;
    await removeStrayCopies(paths);
    // Fenced: had this process paused past the lease, an append acknowledged since by another
    // would be lost with the old file.
    await atomicWrite(paths.segment, tail.subarray(0, decoded.validBytes), () => lock.assertHeldSync());
    // The hint names a record of the old file: it would only fail its check, but costs a read.
    await unlink(paths.tailHint).catch(() => undefined);
  } finally {
    await lock.release();
  }
  state.ck = { off: 0, first: firstId, n: 0, done: 0 };
  await log.rewrite(state);
  return cut;
}

/** Temp copies a cut left behind when its process died before the rename (atomicWrite names them). */
async function removeStrayCopies(paths: QueuePaths): Promise<void> {
  const prefix = `${paths.segment.slice(paths.dir.length + 1)}.tmp-`;
  for (const name of await readdir(paths.dir)) {
    if (name.startsWith(prefix)) await unlink(join(paths.dir, name)).catch(() => undefined);
  }
}

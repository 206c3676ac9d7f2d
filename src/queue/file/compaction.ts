/**
 * Compaction of queues no worker of this process runs (the housekeeping timer calls it through
 * FileQueueStore.compact) and the counters of any queue read from its files.
 */
import { access, readdir, unlink } from 'node:fs/promises';
import { isValidName } from '../../common/names.js';
import { ConsumerLog, doneCount, readConsumerState, retrySummary } from './consumer-log.js';
import { readDeadLetters } from './dead-letters.js';
import { drainIfEmpty } from './drain.js';
import { isErrno, scanFile } from './file-io.js';
import { LockFile } from '../coordination/lock-file.js';
import { consumerLockOptions, queuePaths, writeLockOptions, type QueuePaths } from './queue-paths.js';
import { cutProcessedPrefix, type PrefixCutOptions } from './prefix-cut.js';
import { SegmentRecordCount } from './record-count.js';
import type { QueueCompaction, QueueName, QueueStats } from '../contract.js';

/** Every (tenant, flow) with a directory under `queuesDir` (names breaking the rule are skipped). */
export async function listQueueDirs(queuesDir: string): Promise<QueueName[]> {
  const out: QueueName[] = [];
  let tenants: string[];
  try {
    tenants = (await readdir(queuesDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return out;
    throw err;
  }
  for (const tenant of tenants.filter(isValidName).sort()) {
    const flows = (await readdir(`${queuesDir}/${tenant}`, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    for (const flow of flows.filter(isValidName).sort()) out.push({ tenant, flow });
  }
  return out;
}

/**
 * Compacts a queue with no running worker: takes its consumer lock for the pass, drains it if
 * empty, and deletes its files when it holds no messages, no pending retries and no unhandled
 * dead letters. The id counter file is kept, so ids are never reissued.
 */
export async function compactIdleQueue(paths: QueuePaths, prefixCut?: PrefixCutOptions): Promise<QueueCompaction> {
  const base = { tenant: paths.tenant, flow: paths.flow };
  const present = await Promise.all(
    [paths.segment, paths.consumerLog, paths.deadLetters].map((f) =>
      access(f).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (!present.includes(true)) return { ...base, result: 'absent' };
  const lock = await LockFile.tryAcquire(paths.consumerLock, consumerLockOptions(paths));
  if (!lock) return { ...base, result: 'busy' };
  try {
    const { log, state } = await ConsumerLog.open(paths.consumerLog, paths.segment);
    let drained: boolean;
    let cutBytes = 0;
    try {
      drained = await drainIfEmpty(paths, log, state);
      if (!drained) cutBytes = await cutProcessedPrefix(paths, log, state, prefixCut);
    } finally {
      log.close();
    }
    if (!drained) return { ...base, result: cutBytes > 0 ? 'trimmed' : 'kept' };
    // A pending retry lives in the consumer log, which must stay with it.
    if (state.retries.size > 0 || (await readDeadLetters(paths)).pending.length > 0)
      return { ...base, result: 'drained' };
    return { ...base, result: (await deleteIfStillEmpty(paths)) ? 'deleted' : 'drained' };
  } finally {
    await lock.release();
  }
}

/** Deletes the segment (with its tail hint), consumer log and dead-letter file if no append or dead letter slipped in. */
async function deleteIfStillEmpty(paths: QueuePaths): Promise<boolean> {
  // Same lock order as a replay (dead-letter lock, then append lock), so the two cannot deadlock.
  const dlq = await LockFile.acquire(paths.deadLetterLock, writeLockOptions(paths));
  try {
    const append = await LockFile.acquire(paths.appendLock, writeLockOptions(paths));
    try {
      const seg = await scanFile(paths.segment, 0, () => undefined);
      if (seg.size > 0 || (await readDeadLetters(paths)).pending.length > 0) return false;
      for (const f of [paths.segment, paths.tailHint, paths.consumerLog, paths.deadLetters]) {
        dlq.assertHeldSync();
        append.assertHeldSync();
        await unlink(f).catch((err: unknown) => {
          if (!isErrno(err, 'ENOENT')) throw err;
        });
      }
      return true;
    } finally {
      await append.release();
    }
  } finally {
    await dlq.release();
  }
}

/**
 * Counters of a queue read from its files (for a queue this process does not consume). With a
 * `count` kept from an earlier call, only what was appended since is read (see SegmentRecordCount).
 */
export async function readQueueStats(
  queuesDir: string,
  tenant: string,
  flow: string,
  count: SegmentRecordCount = new SegmentRecordCount(),
): Promise<QueueStats> {
  const paths = queuePaths(queuesDir, tenant, flow);
  const state = await readConsumerState(paths.consumerLog, paths.segment);
  const delivered = state.ck.n;
  const pending = Math.max(0, (await count.records(paths.segment)) - delivered);
  const dead = await readDeadLetters(paths);
  return {
    tenant,
    flow,
    total: delivered + pending,
    processed: doneCount(state),
    pending,
    retriesScheduled: state.retries.size,
    retries: retrySummary(state.retries.values()),
    deadLettersPending: dead.pending.length,
  };
}

/**
 * The dead-letter file of one queue: `dead` records (payload as submitted, message id, times,
 * attempts, last error; never the correlation id) and `handled` records written by replay and
 * discard. Every change happens under the queue's dead-letter lock, since the consumer and the
 * `svc dlq` commands may run in different processes.
 */
import { randomUUID } from 'node:crypto';
import { access, mkdir, open } from 'node:fs/promises';
import type { SvcError } from '../../common/errors.js';
import { encodeFrame } from './frame.js';
import { atomicWrite, scanFile, writeAll } from './file-io.js';
import { LockFile } from '../coordination/lock-file.js';
import { writeLockOptions, type QueuePaths } from './queue-paths.js';
import { deadLetterNotFound, type DeadLetter, type ReplayResult, type SegmentAppendResult } from '../contract.js';

export type DeadLetterRecord =
  | ({ readonly t: 'dead' } & DeadLetter)
  | { readonly t: 'handled'; readonly id: number; readonly how: 'replay' | 'discard'; readonly at: string };

/** Folds the file: pending entries in the order they died, and the count of handled ones. */
export async function readDeadLetters(paths: QueuePaths): Promise<{ pending: DeadLetter[]; handled: number }> {
  const scan = await scanFile<DeadLetterRecord>(paths.deadLetters);
  const byId = new Map<number, DeadLetter>();
  let handled = 0;
  for (const { value: r } of scan.frames) {
    if (r.t === 'dead') {
      const { t: _t, ...entry } = r;
      byId.delete(r.id);
      byId.set(r.id, entry);
    } else if (byId.delete(r.id)) handled++;
  }
  return { pending: [...byId.values()], handled };
}

async function appendRecords(paths: QueuePaths, lock: LockFile, records: DeadLetterRecord[]): Promise<void> {
  await mkdir(paths.dir, { recursive: true });
  const fh = await open(paths.deadLetters, 'a');
  try {
    const { size } = await fh.stat();
    lock.assertHeldSync();
    try {
      await writeAll(fh, Buffer.concat(records.map((r) => encodeFrame(r))));
    } catch (err) {
      // A write cut short (a full disk) leaves part of a record, and a reader stops there: every
      // dead letter appended after it would be unreadable. Cut it off (fenced: while the lock is ours).
      if (lock.stillHeldSync()) await fh.truncate(size).catch(() => undefined);
      throw err;
    }
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/** Adds a dead letter; resolves once it is fdatasync'ed. */
export async function addDeadLetter(paths: QueuePaths, entry: DeadLetter): Promise<void> {
  const lock = await LockFile.acquire(paths.deadLetterLock, writeLockOptions(paths));
  try {
    await appendRecords(paths, lock, [{ t: 'dead', ...entry }]);
  } finally {
    await lock.release();
  }
}

function notFound(paths: QueuePaths, id: number): SvcError {
  return deadLetterNotFound(paths.tenant, paths.flow, id);
}

/** Refuses before taking any lock (which would create the queue's directory) when there is no file. */
async function requireFile(paths: QueuePaths, id: number): Promise<void> {
  try {
    await access(paths.deadLetters);
  } catch {
    throw notFound(paths, id);
  }
}

/** Marks a pending entry handled without replaying it; hidden from listings at once. */
export async function discardDeadLetter(paths: QueuePaths, id: number): Promise<DeadLetter> {
  await requireFile(paths, id);
  const lock = await LockFile.acquire(paths.deadLetterLock, writeLockOptions(paths));
  try {
    const entry = (await readDeadLetters(paths)).pending.find((e) => e.id === id);
    if (!entry) throw notFound(paths, id);
    await appendRecords(paths, lock, [{ t: 'handled', id, how: 'discard', at: new Date().toISOString() }]);
    return entry;
  } finally {
    await lock.release();
  }
}

/**
 * Appends a pending entry's payload to the back of the main queue as a new message, then marks
 * the entry handled. A crash between the two leaves it pending (replayed twice at worst).
 */
export async function replayDeadLetter(
  paths: QueuePaths,
  id: number,
  append: (input: { correlationId: string; payload: unknown }) => Promise<SegmentAppendResult>,
  correlationId: string = randomUUID(),
): Promise<ReplayResult> {
  await requireFile(paths, id);
  const lock = await LockFile.acquire(paths.deadLetterLock, writeLockOptions(paths));
  try {
    const entry = (await readDeadLetters(paths)).pending.find((e) => e.id === id);
    if (!entry) throw notFound(paths, id);
    const appended = await append({ correlationId, payload: entry.payload });
    await appendRecords(paths, lock, [{ t: 'handled', id, how: 'replay', at: new Date().toISOString() }]);
    return { entry, message: { ...appended, correlationId } };
  } finally {
    await lock.release();
  }
}

/** Rewrites the file with the pending entries only (handled bodies are physically removed). */
export async function pruneDeadLetters(paths: QueuePaths): Promise<{ kept: number; removed: number }> {
  const lock = await LockFile.acquire(paths.deadLetterLock, writeLockOptions(paths));
  try {
    const { pending, handled } = await readDeadLetters(paths);
    if (handled === 0) return { kept: pending.length, removed: 0 };
    await atomicWrite(paths.deadLetters, Buffer.concat(pending.map((e) => encodeFrame({ t: 'dead', ...e }))), () =>
      lock.assertHeldSync(),
    );
    return { kept: pending.length, removed: handled };
  } finally {
    await lock.release();
  }
}

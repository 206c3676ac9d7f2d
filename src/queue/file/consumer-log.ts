/**
 * The consumer log of one queue: the checkpoint and the retry schedule, as framed records appended
 * by the single consumer (the consumer-lock holder) and folded on open. A checkpoint names the id
 * of the segment's first record, so a checkpoint left over from before a drain is recognised and
 * dropped (ids are never reissued), even if new records have since refilled the segment.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { encodeFrame } from './frame.js';
import { atomicWrite, readAt, readAtSync, scanHandle, writeAllSync, isErrno, SYNC_READ_MAX_BYTES } from './file-io.js';
import { decodeFrames } from './frame.js';
import { FdFile, type ReadableFile } from './fd-file.js';
import type { SegmentRecord } from './segment-record.js';

/** Position of the consumer in the segment. */
export interface Checkpoint {
  /** Segment offset of the next record to deliver for the first time. */
  readonly off: number;
  /** Id of the record at segment offset 0 when `off` was written (null before any). */
  readonly first: number | null;
  /** Records the checkpoint has passed since the last drain. */
  readonly n: number;
  /**
   * Of the messages delivered since the last drain, those whose delivery finished (acknowledged by
   * the handler: at their first delivery, or at a retry), not those dead-lettered. Absent from
   * checkpoints written before it was kept (doneCount then estimates it).
   */
  readonly done?: number;
}

/**
 * A message waiting in the retry schedule: a copy of its segment record (the segment may be
 * drained meanwhile) with `attempts` the attempts consumed so far, and when it is due.
 */
export interface RetryEntry extends SegmentRecord {
  /** When it is due, absolute (epoch milliseconds), so downtime counts toward the wait. */
  readonly due: number;
}

/** Records of the consumer log. */
export type ConsumerLogRecord =
  | { readonly t: 'ck'; readonly ck: Checkpoint }
  | { readonly t: 'retry'; readonly entry: RetryEntry }
  | { readonly t: 'rdone'; readonly id: number };

export const EMPTY_CHECKPOINT: Checkpoint = Object.freeze({ off: 0, first: null, n: 0, done: 0 });

/** Folded state of a consumer log. */
export interface ConsumerState {
  ck: Checkpoint;
  readonly retries: Map<number, RetryEntry>;
}

/** The id of the record at offset 0 of an open segment (undefined when empty or torn). */
export async function firstRecordId(fh: ReadableFile): Promise<number | undefined> {
  let len = 4096;
  for (;;) {
    // The first record's header, on this thread (read each time a worker of the pool gets the queue).
    const buf = len <= SYNC_READ_MAX_BYTES ? readAtSync(fh, 0, len) : await readAt(fh, 0, len);
    const r = decodeFrames<{ id: number }>(buf, 0);
    if (r.frames.length > 0) return r.frames[0]!.value.id;
    if (r.stop === 'incomplete' && r.needBytes !== undefined && r.needBytes > len && buf.length === len) {
      len = r.needBytes;
      continue;
    }
    return undefined;
  }
}

/**
 * Reads the id of the record at offset 0 of the segment (undefined when empty or torn), opened and
 * closed on the calling thread (fd-file.ts): done each time a worker of the pool gets the queue.
 */
export async function firstSegmentId(segmentPath: string): Promise<number | undefined> {
  let f: FdFile;
  try {
    f = await FdFile.open(segmentPath, 'read');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  try {
    return await firstRecordId(f);
  } finally {
    f.close();
  }
}

/**
 * The open consumer log; only the consumer-lock holder creates one. Opened and closed on the
 * calling thread (fd-file.ts): a worker of the pool does both on each turn it gets.
 */
export class ConsumerLog {
  readonly path: string;
  #fh: FdFile;
  #bytes: number;
  /** A failed append may have left part of a record past `#bytes`. */
  #torn = false;

  private constructor(path: string, fh: FdFile, bytes: number) {
    this.path = path;
    this.#fh = fh;
    this.#bytes = bytes;
  }

  /** Bytes in the log file (compaction rewrites it when it has grown). */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Opens (creating) the log, cuts a torn tail, folds it and reconciles the checkpoint with the
   * segment: a checkpoint whose first id no longer matches the segment predates a drain.
   */
  static async open(path: string, segmentPath: string): Promise<{ log: ConsumerLog; state: ConsumerState }> {
    const fh = await FdFile.open(path, 'append');
    try {
      const scan = await scanHandle<ConsumerLogRecord>(fh, 0);
      if (scan.validEnd < scan.size) {
        fh.truncateSync(scan.validEnd);
        await fh.datasync();
      }
      const state = foldConsumerLog(scan.frames.map((f) => f.value));
      state.ck = await reconcileCheckpoint(state.ck, segmentPath);
      return { log: new ConsumerLog(path, fh, scan.validEnd), state };
    } catch (err) {
      fh.close();
      throw err;
    }
  }

  /**
   * Appends records in one write (a small page-cache write, done on the calling thread: see
   * file-io.ts); with `sync`, waits for an fdatasync covering them, which the pool does.
   */
  async append(records: ConsumerLogRecord[], sync: boolean): Promise<void> {
    if (records.length === 0) return;
    const buf = Buffer.concat(records.map((r) => encodeFrame(r)));
    if (this.#torn) this.#cutTornTail();
    try {
      writeAllSync(this.#fh, buf);
    } catch (err) {
      // A write cut short (a full disk) leaves part of a record. The next open would stop reading
      // there and lose every record appended after it (the checkpoint would fall back and the
      // queue be delivered again), so the part is cut off before anything else is appended.
      this.#torn = true;
      try {
        this.#cutTornTail();
      } catch {
        // Retried before the next append.
      }
      throw err;
    }
    this.#bytes += buf.length;
    if (sync) await this.#fh.datasync();
  }

  #cutTornTail(): void {
    this.#fh.truncateSync(this.#bytes);
    this.#torn = false;
  }

  async sync(): Promise<void> {
    await this.#fh.datasync();
  }

  /** Replaces the log by the records describing `state` alone (atomic rename). */
  async rewrite(state: ConsumerState): Promise<void> {
    const records: ConsumerLogRecord[] = [
      { t: 'ck', ck: state.ck },
      ...[...state.retries.values()].map((entry) => ({ t: 'retry' as const, entry })),
    ];
    const buf = Buffer.concat(records.map((r) => encodeFrame(r)));
    await atomicWrite(this.path, buf);
    this.#fh.close();
    this.#fh = await FdFile.open(this.path, 'append');
    this.#bytes = buf.length;
  }

  close(): void {
    this.#fh.close();
  }
}

/** Folds consumer-log records into the current checkpoint and retry schedule. */
export function foldConsumerLog(records: ConsumerLogRecord[]): ConsumerState {
  const state: ConsumerState = { ck: EMPTY_CHECKPOINT, retries: new Map() };
  for (const r of records) {
    if (r.t === 'ck') state.ck = r.ck;
    else if (r.t === 'retry') state.retries.set(r.entry.id, r.entry);
    else if (r.t === 'rdone') state.retries.delete(r.id);
  }
  return state;
}

/** Reads a consumer log without opening it for writing (stats of a queue consumed elsewhere). */
export async function readConsumerState(path: string, segmentPath: string): Promise<ConsumerState> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT'))
      return { ck: await reconcileCheckpoint(EMPTY_CHECKPOINT, segmentPath), retries: new Map() };
    throw err;
  }
  try {
    const scan = await scanHandle<ConsumerLogRecord>(fh, 0);
    const state = foldConsumerLog(scan.frames.map((f) => f.value));
    state.ck = await reconcileCheckpoint(state.ck, segmentPath);
    return state;
  } finally {
    await fh.close();
  }
}

async function reconcileCheckpoint(ck: Checkpoint, segmentPath: string): Promise<Checkpoint> {
  if (ck.off === 0) return EMPTY_CHECKPOINT;
  const first = await firstSegmentId(segmentPath);
  return first === undefined || first !== ck.first ? EMPTY_CHECKPOINT : ck;
}

/**
 * The messages whose delivery finished since the last drain (QueueStats.processed). A checkpoint
 * written before `done` was kept counts as done every record it passed that is not in the retry
 * schedule (dead letters included: they cannot be told apart there), until the next drain.
 */
export function doneCount(state: ConsumerState): number {
  return state.ck.done ?? Math.max(0, state.ck.n - state.retries.size);
}

/** The retry schedule as the queue's figures show it, soonest first. */
export function retrySummary(entries: Iterable<RetryEntry>): { id: number; attempts: number; dueMs: number }[] {
  return [...entries].map((e) => ({ id: e.id, attempts: e.attempts, dueMs: e.due })).sort((a, b) => a.dueMs - b.dueMs);
}

/**
 * The write side of one queue's segment, with group commit: appends that arrive while a batch is
 * being written wait for the next one, and each batch costs one write to a segment opened with
 * O_DSYNC, which returns only once the data is as durable as after an fdatasync. One call on the
 * libuv pool instead of two (write, then fdatasync) halves the event-loop round trips of a commit,
 * and under load each round trip waits for a whole turn of request handling. Writers in several
 * processes take the append lock around each write so records never interleave and each knows
 * its records' offsets.
 */
import { constants } from 'node:fs';
import { mkdir, open, stat, type FileHandle } from 'node:fs/promises';
import { isoMillis } from '../../common/clock.js';
import { StorageUnavailableError } from '../../common/errors.js';
import { encodeFrameText, type Frame } from './frame.js';
import { isErrno, scanHandle } from './file-io.js';
import { IdAllocator } from './id-allocator.js';
import { LockFile } from '../coordination/lock-file.js';
import { readTailHint, TAIL_HINT_EVERY_BYTES, verifiedTailStart, writeTailHint, type TailHint } from './tail-hint.js';
import { writeLockOptions, type QueuePaths } from './queue-paths.js';
import type { AppendInput, SegmentAppendResult } from '../contract.js';
import type { SegmentRecord } from './segment-record.js';
import { THIS_WRITER } from './writer-token.js';

/**
 * A batch just made durable in the segment, as a consumer reading the file would find it. The
 * in-process consumer takes the records from here instead of reading them back (a stat, a read
 * and a checksum pass per batch) when it stands exactly at `start` of the same file.
 */
export interface CommittedBatch {
  /** Inode of the segment written (a replaced file has another). */
  readonly ino: number;
  /** Segment offset of the batch's first record. */
  readonly start: number;
  /** Segment offset just past its last record. */
  readonly end: number;
  /** Decodes the records (each parsed from the JSON text written, exactly as from the file). */
  frames(): Frame<SegmentRecord>[];
}

export interface SegmentAppenderOptions {
  /** Ids reserved per counter write. @default 1024 */
  idBlockSize?: number;
  /**
   * Called after each synced batch (the in-process consumer uses it to wake at once); without a
   * batch when the records' place had to be found by reading the file back (see `#locate`).
   */
  onAppended?: (batch: CommittedBatch | undefined) => void;
  /**
   * How long the append lock is kept after a batch in case another append follows (a sequential
   * appender then pays no lock cost), and how often, while idle, the appender then looks whether
   * another writer waits for it. Milliseconds. @default 2
   */
  lingerMs?: number;
  /**
   * The longest the lock is kept idle after a batch while nobody waits for it. Under load the next
   * batch usually follows within a few milliseconds but past `lingerMs` (the submissions of the
   * last one are still being answered): each re-take then cost a link, two stats and an unlink.
   * Milliseconds. @default 20
   */
  idleHoldMs?: number;
  /**
   * Longest continuous hold before the lock is handed back, if someone is waiting for it (another
   * server, `svc dlq replay`, a drain), so it gets a turn. Milliseconds. @default 25
   */
  maxHoldMs?: number;
}

/** Read-write append, created when missing; every write is synced (fdatasync semantics) before it returns. */
const SEGMENT_FLAGS = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC;

/** Pause after a forced hand-back, longer than a waiter's poll step, so a waiter gets the lock. */
const HAND_BACK_PAUSE_MS = 6;

interface Pending {
  readonly input: AppendInput;
  resolve(r: SegmentAppendResult): void;
  reject(err: unknown): void;
}

export interface TailRepair {
  /** The segment's end after the repair. */
  readonly validEnd: number;
  /** Where the check began: the end of the hinted record, or 0 without a hint it could believe. */
  readonly checkedFrom: number;
}

/**
 * Cuts a torn tail (a record half-written by a writer that died) off the segment, checking only
 * what follows the record named by the hint at `hintPath` when it is read back whole (tail-hint.ts).
 * Call only while holding the append lock, when no write can be in progress.
 */
export async function repairSegmentTail(fh: FileHandle, hintPath?: string): Promise<TailRepair> {
  const hint = hintPath === undefined ? undefined : await readTailHint(hintPath).catch(() => undefined);
  const checkedFrom = await verifiedTailStart(fh, (await fh.stat()).size, hint);
  const scan = await scanHandle(fh, checkedFrom, () => undefined);
  if (scan.validEnd < scan.size) {
    await fh.truncate(scan.validEnd);
    await fh.datasync();
  }
  return { validEnd: scan.validEnd, checkedFrom };
}

export class SegmentAppender {
  readonly paths: QueuePaths;
  readonly #ids: IdAllocator;
  readonly #onAppended: ((batch: CommittedBatch | undefined) => void) | undefined;
  #pending: Pending[] = [];
  #running = false;
  #scheduled = false;
  #resolvedAt = -Infinity;
  /** The segment offset the batch being written starts at, until its results are given out; see unsyncedFrom. */
  #writingFrom: number | undefined;
  #fh: FileHandle | undefined;
  #ino = -1;
  #closed = false;
  /** The append lock while held across batches, with when it was taken and the segment end. */
  #lock: LockFile | undefined;
  #lockSince = 0;
  #end = 0;
  #releaseTimer: NodeJS.Timeout | undefined;
  readonly #lingerMs: number;
  readonly #idleHoldMs: number;
  readonly #maxHoldMs: number;
  /** The last record this appender wrote whole, and the end named by the last hint it left. */
  #lastWhole: TailHint | undefined;
  #hintedEnd = 0;
  #hintWrite: Promise<void> | undefined;
  /** When the last batch finished (ms since the epoch): see releaseIdleHandle. */
  #idleSince = Date.now();

  constructor(paths: QueuePaths, opts: SegmentAppenderOptions = {}) {
    this.paths = paths;
    this.#ids = new IdAllocator(paths.counter, paths.counterLock, opts.idBlockSize ?? 1024, writeLockOptions(paths));
    this.#onAppended = opts.onAppended;
    this.#lingerMs = opts.lingerMs ?? 2;
    this.#idleHoldMs = Math.max(this.#lingerMs, opts.idleHoldMs ?? 20);
    this.#maxHoldMs = opts.maxHoldMs ?? 25;
  }

  /**
   * Where the batch being written starts in the segment, from just before its write until its
   * appends are answered and it is offered (onAppended); undefined otherwise. What lies past it is
   * in the file before it is durable: this process's consumer does not read it (queue-consumer.ts).
   */
  get unsyncedFrom(): number | undefined {
    return this.#writingFrom;
  }

  /** Appends one message; resolves after an fdatasync that covers it. */
  /**
   * When this appender last resolved a batch (performance.now()): every append it ever resolved was
   * durable before then. -Infinity before the first.
   */
  get resolvedAt(): number {
    return this.#resolvedAt;
  }

  append(input: AppendInput): Promise<SegmentAppendResult> {
    if (this.#closed)
      return Promise.reject(new Error(`queue ${this.paths.tenant}/${this.paths.flow} appender is closed`));
    return new Promise<SegmentAppendResult>((resolve, reject) => {
      this.#pending.push({ input, resolve, reject });
      // The first append of an idle queue starts a commit at the end of this event-loop phase,
      // so the batch holds every request parsed in the same turn, not just the first of them.
      if (!this.#running && !this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          if (!this.#running) void this.#run();
        });
      }
    });
  }

  /** Waits for queued appends, then closes the segment handle. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#running || this.#scheduled) await new Promise((r) => setTimeout(r, 1));
    await this.#releaseLock();
    // A clean stop leaves the hint at the last record, so the next open checks nothing.
    await this.#hintWrite;
    if (this.#lastWhole !== undefined && this.#lastWhole.end !== this.#hintedEnd)
      await this.#leaveHint(this.#lastWhole);
    const fh = this.#fh;
    this.#fh = undefined;
    await fh?.close();
  }

  /**
   * Closes the segment's file handle when nothing was appended for `idleMs` and the append lock is
   * not kept; true when it did. The next append re-opens the file and checks its tail from the hint
   * left now (a read of one record). A process writing to many queues kept one open file per queue
   * for its whole life: 1,000 queues came close to a common limit of 1,024 open files.
   */
  async releaseIdleHandle(idleMs: number, now = Date.now()): Promise<boolean> {
    if (
      this.#fh === undefined ||
      this.#closed ||
      this.#running ||
      this.#scheduled ||
      this.#pending.length > 0 ||
      this.#lock !== undefined
    )
      return false;
    if (now - this.#idleSince < idleMs) return false;
    const fh = this.#fh;
    this.#fh = undefined;
    this.#ino = -1;
    await this.#hintWrite;
    if (this.#lastWhole !== undefined && this.#lastWhole.end !== this.#hintedEnd)
      await this.#leaveHint(this.#lastWhole);
    await fh.close();
    return true;
  }

  /** Leaves a hint at `rec` (a record of this appender's, whole in the file); a failure only costs a longer check later. */
  async #leaveHint(rec: TailHint): Promise<void> {
    this.#hintedEnd = rec.end;
    await writeTailHint(this.paths.tailHint, rec).catch(() => undefined);
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        try {
          const { results, committed } = await this.#commit(batch);
          this.#resolvedAt = performance.now();
          batch.forEach((p, i) => {
            const r = results[i]!;
            if (r instanceof Error) p.reject(r);
            else p.resolve(r);
          });
          this.#writingFrom = undefined;
          this.#onAppended?.(committed);
        } catch (err) {
          this.#writingFrom = undefined;
          for (const p of batch) p.reject(err);
          await this.#releaseLock().catch(() => undefined);
        }
        // As on the first append: the next batch is cut at the end of this loop phase.
        if (this.#pending.length > 0) await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.#running = false;
      this.#idleSince = Date.now();
    }
    if (this.#lock && !this.#releaseTimer) this.#lingerIdle();
  }

  /**
   * Keeps the lock while idle: every `lingerMs`, hands it back if another writer waits for it (its
   * `.want` touched, LockFile.wanted; one stat on this thread), and after `idleHoldMs` in any case.
   */
  #lingerIdle(): void {
    this.#releaseTimer = setTimeout(() => {
      this.#releaseTimer = undefined;
      if (this.#running || this.#scheduled || this.#lock === undefined) return;
      const idleFor = Date.now() - this.#idleSince;
      if (
        idleFor + this.#lingerMs <= this.#idleHoldMs &&
        !LockFile.wantedSync(this.paths.appendLock, 2 * this.#maxHoldMs)
      )
        this.#lingerIdle();
      else void this.#releaseLock().catch(() => undefined);
    }, this.#lingerMs);
  }

  async #releaseLock(): Promise<void> {
    if (this.#releaseTimer) clearTimeout(this.#releaseTimer);
    this.#releaseTimer = undefined;
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release();
  }

  /** The append lock, kept from the previous batch when possible; the segment is checked on each new take. */
  async #takeLock(): Promise<FileHandle> {
    if (this.#releaseTimer) clearTimeout(this.#releaseTimer);
    this.#releaseTimer = undefined;
    if (this.#lock && Date.now() - this.#lockSince > this.#maxHoldMs) {
      // Handed back only when someone waited: alone, a hand-back and re-take every maxHoldMs
      // cost a quarter of the commit pipeline's time under load (measured).
      if (await LockFile.wanted(this.paths.appendLock, 2 * this.#maxHoldMs)) {
        await this.#releaseLock();
        await new Promise((r) => setTimeout(r, HAND_BACK_PAUSE_MS));
      } else {
        this.#lockSince = Date.now();
      }
    }
    if (this.#lock && this.#fh) {
      if (this.#lock.stillHeldSync()) return this.#fh;
      // Taken over while this process was paused past the lease: the end it knows is stale.
      await this.#releaseLock();
    }
    const lock = await LockFile.acquire(this.paths.appendLock, writeLockOptions(this.paths));
    this.#lock = lock;
    this.#lockSince = Date.now();
    try {
      const fh = await this.#handle(lock.tookOver);
      this.#end = (await fh.stat()).size;
      return fh;
    } catch (err) {
      await this.#releaseLock();
      throw err;
    }
  }

  async #commit(
    batch: Pending[],
  ): Promise<{ results: (SegmentAppendResult | Error)[]; committed: CommittedBatch | undefined }> {
    const ids = await this.#ids.take(batch.length);
    // Each record's JSON text is kept beside its frame: the in-process consumer decodes from it.
    const encoded: ({ text: string; frame: Buffer } | Error)[] = batch.map((p, i) => {
      const rec: SegmentRecord = {
        id: ids[i]!,
        correlation_id: p.input.correlationId,
        enqueued_at: p.input.enqueuedAt ?? isoMillis(),
        attempts: 0,
        payload: p.input.payload,
        // JSON.stringify leaves out undefined: a message without trace context is written as before.
        traceparent: p.input.traceparent,
        tracestate: p.input.tracestate,
        src: p.input.receiptSource,
        w: p.input.receiptSource === undefined ? undefined : THIS_WRITER,
      };
      try {
        const text = JSON.stringify(rec);
        return { text, frame: encodeFrameText(text) };
      } catch (err) {
        return err instanceof Error ? err : new Error(String(err));
      }
    });
    // Other processes wait for the lock during this write and sync: while busy, this process
    // holds it across batches (up to maxHoldMs), so it knows the segment's end without asking.
    const fh = await this.#takeLock();
    const base = this.#end;
    this.#writingFrom = base;
    const encodable = encoded.filter((e): e is { text: string; frame: Buffer } => !(e instanceof Error));
    const buf = Buffer.concat(encodable.map((e) => e.frame));
    let written = encodable;
    let failure: unknown;
    // Bytes the kernel took; O_DSYNC: each write returns only once what it took is durable.
    let took = 0;
    try {
      while (took < buf.length) took += (await fh.write(buf, took, buf.length - took, null)).bytesWritten;
      this.#end += buf.length;
    } catch (err) {
      // A write cut short (a full disk): the records it took whole are durable and may have been
      // read by the consumer already, so they stay and are acknowledged; the rest is cut off.
      failure = err;
      written = encodable.slice(
        0,
        await this.#cutAfterFailedWrite(
          fh,
          base,
          took,
          encodable.map((e) => e.frame),
        ),
      );
      if (written.length === 0) throw err;
    }
    if (failure === undefined && !this.#lock?.stillHeldSync()) {
      // Taken over during the write (paused past the lease): the records are durable, but another
      // writer may have appended first, so `base` is not known to be where they landed.
      return { results: await this.#locate(base, ids, encoded), committed: undefined };
    }
    let offset = base;
    let nth = 0;
    const results = encoded.map((e, i) => {
      if (e instanceof Error) return e;
      if (nth++ >= written.length) return failure instanceof Error ? failure : new Error(String(failure));
      const r: SegmentAppendResult = { storage: 'segment', id: ids[i]!, byteOffset: offset };
      offset += e.frame.length;
      return r;
    });
    const last =
      written.length === 0
        ? undefined
        : results.filter((r): r is SegmentAppendResult => !(r instanceof Error))[written.length - 1];
    if (last !== undefined) {
      this.#lastWhole = { offset: last.byteOffset, end: offset, id: last.id };
      // Out of the commit's way: at most one hint write at a time, every TAIL_HINT_EVERY_BYTES.
      if (
        this.#hintWrite === undefined &&
        (offset - this.#hintedEnd >= TAIL_HINT_EVERY_BYTES || offset < this.#hintedEnd)
      ) {
        this.#hintWrite = this.#leaveHint(this.#lastWhole).finally(() => (this.#hintWrite = undefined));
      }
    }
    const committed: CommittedBatch = {
      ino: this.#ino,
      start: base,
      end: offset,
      frames: () => {
        let at = base;
        return written.map((e) => {
          const f = { offset: at, end: at + e.frame.length, value: JSON.parse(e.text) as SegmentRecord };
          at = f.end;
          return f;
        });
      },
    };
    return { results, committed };
  }

  /**
   * Finds where a batch written without the lock landed: under the lock again, reads the segment
   * from `base` (its end when the batch began, a record boundary) for the batch's ids. A record
   * not found was cut as a torn tail by the writer that took over, and is refused, not acknowledged.
   */
  async #locate(
    base: number,
    ids: number[],
    encoded: ({ text: string; frame: Buffer } | Error)[],
  ): Promise<(SegmentAppendResult | Error)[]> {
    await this.#releaseLock();
    const fh = await this.#takeLock();
    const wanted = new Set(ids);
    const found = new Map<number, number>();
    await scanHandle<SegmentRecord>(fh, base, (f) => {
      if (wanted.has(f.value.id)) found.set(f.value.id, f.offset);
    });
    return encoded.map((e, i) => {
      if (e instanceof Error) return e;
      const offset = found.get(ids[i]!);
      return offset === undefined
        ? new StorageUnavailableError(
            `queue ${this.paths.tenant}/${this.paths.flow}: a record written while the append lock was taken over is missing; not acknowledged`,
          )
        : { storage: 'segment' as const, id: ids[i]!, byteOffset: offset };
    });
  }

  /**
   * After a write failed part way: keeps the records the kernel took whole (`took` bytes from
   * `base`) and cuts the segment just past them, while the lock is still ours, so no writer appends
   * behind a torn record. Never cuts below a record that is whole in the file: a consumer that read
   * it would stand past the cut and read the next batch from the middle of a record. Then lets go
   * of the lock and the handle (the next take re-reads the end). Returns how many of the records
   * are acknowledged: whole in the file and within what the kernel reported taken.
   */
  async #cutAfterFailedWrite(fh: FileHandle, base: number, took: number, frames: Buffer[]): Promise<number> {
    const size = await fh.stat().then(
      (st) => st.size,
      () => base + took,
    );
    let end = base;
    let kept = 0;
    // A record in the file that the kernel did not report taken (its sync failed) is kept too but
    // not acknowledged: it may still be delivered (at least once).
    let acked = 0;
    while (kept < frames.length && end + frames[kept]!.length <= size) {
      end += frames[kept]!.length;
      kept++;
      if (end <= base + took) acked = kept;
    }
    // Fenced: had the lock been taken over meanwhile, the cut could remove another writer's records.
    if (this.#lock?.stillHeldSync()) await fh.truncate(end).catch(() => undefined);
    await this.#releaseLock().catch(() => undefined);
    const reopen = this.#fh;
    this.#fh = undefined;
    await reopen?.close().catch(() => undefined);
    return acked;
  }

  /**
   * The segment handle, (re)opened when the file was removed by compaction since; the tail is
   * checked on first open and after breaking a dead writer's lock. Called under the append lock.
   */
  async #handle(tookOver: boolean): Promise<FileHandle> {
    let ino = -1;
    try {
      ino = (await stat(this.paths.segment)).ino;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    if (this.#fh && ino === this.#ino) {
      if (tookOver) await repairSegmentTail(this.#fh, this.paths.tailHint);
      return this.#fh;
    }
    await this.#fh?.close();
    this.#fh = undefined;
    await mkdir(this.paths.dir, { recursive: true });
    // A new queue's consumer log is made with its segment, off the worker's path: a file create
    // costs 0.5 to 1 ms here (measured), and a pool's worker would pay it on its first turn.
    if (ino === -1) await (await open(this.paths.consumerLog, 'a', 0o644)).close();
    const fh = await open(this.paths.segment, SEGMENT_FLAGS, 0o644);
    this.#ino = (await fh.stat()).ino;
    this.#fh = fh;
    await repairSegmentTail(fh, this.paths.tailHint);
    return fh;
  }
}

/**
 * The worker loop of one queue: delivers due retries first, then fresh messages in segment order
 * (FIFO on first delivery), hands each to a caller-supplied handler and records the outcome. At
 * least once: acks are checkpointed in batches, so a crash between a run and its checkpoint
 * redelivers. Only the holder of the queue's consumer lock runs one.
 */
import { fstatSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { FdFile } from './fd-file.js';
import { decodeFrames, type Frame } from './frame.js';
import { isErrno, readAt, readAtSync, scanHandle, sizeSync, SCAN_CHUNK_BYTES, SYNC_READ_MAX_BYTES } from './file-io.js';
import {
  ConsumerLog,
  doneCount,
  retrySummary,
  type Checkpoint,
  type ConsumerLogRecord,
  type ConsumerState,
  type RetryEntry,
} from './consumer-log.js';
import { addDeadLetter } from './dead-letters.js';
import { drainIfEmpty } from './drain.js';
import { cutProcessedPrefix, type PrefixCutOptions } from './prefix-cut.js';
import { SegmentRecordCount } from './record-count.js';
import { LockFile } from '../coordination/lock-file.js';
import { consumerLockOptions, writeLockOptions, type QueuePaths } from './queue-paths.js';
import type { CommittedBatch } from './segment-appender.js';
import type { SegmentRecord } from './segment-record.js';
import { settlementOf } from '../settlement.js';
import { InFlightHandler } from '../in-flight-handler.js';
import {
  DEFAULT_RETRY_POLICY,
  type ConsumerStateName,
  type Outcome,
  type QueueConsumerHandle,
  type QueueConsumerOptions,
  type QueueMessage,
  type QueueStats,
  type QueueBacklog,
} from '../contract.js';
import { readDeadLetters } from './dead-letters.js';
import { THIS_WRITER } from './writer-token.js';

/**
 * Longest the consumer leaves its written checkpoint unsynced. Milliseconds. A kill -9 loses
 * nothing written; a power loss at worst redelivers what the last sync did not cover (delivery is
 * at least once). Retries and dead letters are synced before they count, whatever this says.
 */
const CHECKPOINT_SYNC_MS = 100;

/** Records read ahead in memory at most; past it, a lagging consumer reads them from the file later. */
const MAX_BUFFERED = 1024;

/** The file backend's worker options: the common ones, and the lock lease and compaction settings of its files. */
export interface FileQueueConsumerOptions extends QueueConsumerOptions {
  /** Lease of the consumer lock (see LockFile). Milliseconds. @default 30000 */
  readonly lockLeaseMs?: number;
  /** When a compaction pass gives back the processed prefix of a queue that is not empty (prefix-cut.ts). */
  readonly prefixCut?: PrefixCutOptions;
  /**
   * Where this process's own append to the queue is still being written, if one is (the segment
   * offset its batch starts at; SegmentAppender.unsyncedFrom): nothing from there on is read until
   * the commit offers it. Set by FileQueueStore.
   */
  readonly unsyncedFrom?: () => number | undefined;
}

/**
 * How stale the last ownership check may be before a delivery or a checkpoint write. Milliseconds.
 * A process resuming from a pause finds every check stale, so it looks before it acts again.
 */
const OWNERSHIP_CHECK_MS = 50;

/** Thrown inside the loop when the lock is no longer ours; ends the loop. */
class LockLostError extends Error {
  override readonly name = 'LockLostError';
}

/** Result of a compaction pass on a running consumer. */
export interface ConsumerCompaction {
  readonly drained: boolean;
  /** Bytes of processed prefix given back from a queue that is not empty (0 when none). */
  readonly cutBytes: number;
}

export class QueueConsumer implements QueueConsumerHandle {
  readonly paths: QueuePaths;
  #state: ConsumerStateName = 'running';
  readonly #opts: Required<
    Omit<
      FileQueueConsumerOptions,
      | 'onAttemptFailed'
      | 'onDeadLettered'
      | 'onError'
      | 'onLockLost'
      | 'onIdle'
      | 'onReceiptRead'
      | 'prefixCut'
      | 'recordsDurable'
      | 'recordsDurableSoon'
      | 'unsyncedFrom'
    >
  > &
    FileQueueConsumerOptions;
  #ownershipCheckedAt = Date.now();
  #lockLost = false;
  readonly #lock: LockFile;
  readonly #log: ConsumerLog;
  readonly #cs: ConsumerState;
  /** The segment, read by descriptor (fd-file.ts): opened and closed on this thread each turn. */
  #seg: FdFile | undefined;
  #segIno = -1;
  readonly #recordCount = new SegmentRecordCount();
  #readPos: number;
  #buffered: Frame<SegmentRecord>[] = [];
  #pendingRecords: ConsumerLogRecord[] = [];
  #ckWritten: Checkpoint;
  /**
   * The checkpoint a consumer-log write may record: past the deliveries whose records are durable
   * (recordsDurable). Without that option it is the checkpoint itself.
   */
  #ckSafe: Checkpoint;
  /** Bumped when the checkpoint is rewritten other than by a delivery (drain, prefix cut, torn tail): an answer asked before it is stale. */
  #ckEpoch = 0;
  /** A recordsDurable() asked in the background and not yet answered. */
  #barrier: Promise<void> | undefined;
  #unsynced = 0;
  /** Records written to the consumer log but not yet covered by a sync. */
  #logDirty = false;
  /**
   * When the consumer log was last synced; start counts as one (nothing of this worker is written
   * yet), so a worker's first checkpoints wait CHECKPOINT_SYNC_MS like the others: a pool worker
   * serving a short queue synced twice per turn (at its 64th ack and at its finish), measured.
   */
  #syncedAt = Date.now();
  #wake: (() => void) | undefined;
  #notified = false;
  readonly #inFlight: InFlightHandler;
  #compactWaiters: ((r: ConsumerCompaction) => void)[] = [];
  /**
   * True while the loop reads the segment or a compaction pass may move it: the read position is
   * in motion, so an offered batch is left to be read from the file.
   */
  #onFile = false;
  #loop: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  /** finish() was called: the loop ends after the delivery in flight. */
  #finishing = false;

  private constructor(
    paths: QueuePaths,
    opts: FileQueueConsumerOptions,
    lock: LockFile,
    log: ConsumerLog,
    cs: ConsumerState,
  ) {
    this.paths = paths;
    this.#opts = {
      pollIntervalMs: 500,
      defaultPolicy: DEFAULT_RETRY_POLICY,
      // Measured (issue 33): 64 let a takeover after a pause redeliver up to 64 acknowledged
      // messages; a consumer-log write is a few microseconds on this thread.
      checkpointEvery: 16,
      closeGraceMs: 5000,
      lockLeaseMs: 30_000,
      deliveriesPerTurn: 16,
      ...opts,
    };
    this.#inFlight = new InFlightHandler(this.#opts.handler, this.#opts.defaultPolicy);
    this.#lock = lock;
    this.#log = log;
    this.#cs = cs;
    this.#readPos = cs.ck.off;
    this.#ckWritten = cs.ck;
    this.#ckSafe = cs.ck;
  }

  /**
   * Takes the queue's consumer lock and starts the loop; undefined when a live process (this one
   * included) already consumes the queue.
   */
  static async start(paths: QueuePaths, opts: FileQueueConsumerOptions): Promise<QueueConsumer | undefined> {
    const lock = await LockFile.tryAcquire(paths.consumerLock, consumerLockOptions(paths, opts.lockLeaseMs));
    if (!lock) return undefined;
    try {
      const { log, state } = await ConsumerLog.open(paths.consumerLog, paths.segment);
      const c = new QueueConsumer(paths, opts, lock, log, state);
      c.#loop = c.#run();
      return c;
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  get state(): ConsumerStateName {
    return this.#state;
  }

  /** Wakes an idle loop at once (an append in this process calls it). */
  notify(): void {
    this.#notified = true;
    this.#wake?.();
  }

  /**
   * Wakes the loop for a batch this process just appended, and takes its records as read when
   * they are exactly the next bytes of the file being read: the same records, decoded from the
   * same JSON text, without reading them back. Without a batch it only wakes the loop.
   */
  offer(batch: CommittedBatch | undefined): void {
    if (
      batch !== undefined &&
      this.#state === 'running' &&
      !this.#onFile &&
      batch.ino === this.#segIno &&
      batch.start === this.#readPos &&
      this.#buffered.length < MAX_BUFFERED
    ) {
      const frames = batch.frames();
      if (this.#buffered.length === 0) this.#buffered = frames;
      else for (const f of frames) this.#buffered.push(f);
      this.#readPos = batch.end;
    }
    this.notify();
  }

  /** Runs a compaction pass between deliveries: drains the queue if it is empty. */
  compact(): Promise<ConsumerCompaction> {
    if (this.#state !== 'running') return Promise.resolve({ drained: false, cutBytes: 0 });
    return new Promise((resolve) => {
      this.#compactWaiters.push(resolve);
      this.notify();
    });
  }

  /** Counters of this queue as this consumer sees them. */
  async stats(): Promise<QueueStats> {
    // The checkpoint has passed the first `n` records of the segment (in order, since the last
    // drain), so what is left of the counted records is pending.
    const delivered = this.#cs.ck.n;
    const pending = Math.max(0, (await this.#recordCount.records(this.paths.segment)) - delivered);
    const dead = await readDeadLetters(this.paths);
    return {
      tenant: this.paths.tenant,
      flow: this.paths.flow,
      total: delivered + pending,
      processed: doneCount(this.#cs),
      pending,
      retriesScheduled: this.#cs.retries.size,
      retries: retrySummary(this.#cs.retries.values()),
      deadLettersPending: dead.pending.length,
    };
  }

  /**
   * Stops the loop: waits up to closeGraceMs for the in-flight handler (recording its outcome),
   * otherwise abandons it unacked (it will be redelivered); then checkpoints and releases the lock.
   * Every cleanup step runs even if one fails. Safe to call twice.
   */
  close(): Promise<void> {
    this.#closing ??= this.#closeOnce();
    return this.#closing;
  }

  async finish(): Promise<QueueBacklog | undefined> {
    this.#finishing = true;
    this.#wake?.();
    // The loop ends at its next turn; close() then finds no handler in flight (unless it is called
    // meanwhile, with its own grace).
    await this.#loop?.catch(() => undefined);
    await this.close();
    return this.#backlogAfterRelease();
  }

  /**
   * What the queue holds to deliver now that the lock is released: messages past the checkpoint
   * this worker wrote (one stat of the segment, read after the release: an append another process
   * made before it is seen, one made after finds the lock free), or its retry schedule.
   */
  #backlogAfterRelease(): QueueBacklog | undefined {
    const { tenant, flow } = this.paths;
    let size = 0;
    try {
      size = statSync(this.paths.segment).size;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    // Not equal: more was appended (or, had the file been replaced, deliver and see).
    if (size !== this.#ckWritten.off) return { tenant, flow, readyAt: 0 };
    const due = this.#nextRetryDueMs();
    return due === undefined ? undefined : { tenant, flow, readyAt: due };
  }

  async #closeOnce(): Promise<void> {
    this.#state = 'closing';
    this.#wake?.();
    await this.#inFlight.closeWithin(this.#loop, this.#opts.closeGraceMs);
    const errors: unknown[] = [];
    for (const step of [
      () => this.#durableNow(),
      () => this.#flush(true),
      () => this.#log.close(),
      () => this.#seg?.close(),
      () => this.#lock.release(),
    ]) {
      try {
        await step();
      } catch (err) {
        errors.push(err);
      }
    }
    for (const w of this.#compactWaiters.splice(0)) w({ drained: false, cutBytes: 0 });
    this.#state = 'closed';
    if (errors.length > 0) throw errors[0];
  }

  /**
   * Fences every delivery and checkpoint write: when the last look is older than OWNERSHIP_CHECK_MS,
   * looks again (synchronously, so nothing runs between the look and the action) and throws
   * LockLostError when another process holds the queue's lock now.
   */
  #assertOwner(): void {
    const now = Date.now();
    if (now - this.#ownershipCheckedAt < OWNERSHIP_CHECK_MS) return;
    if (!this.#lock.stillHeldSync()) {
      this.#lockLost = true;
      throw new LockLostError(
        `the consumer lock of queue ${this.paths.tenant}/${this.paths.flow} is held by another process now`,
      );
    }
    this.#ownershipCheckedAt = now;
  }

  async #run(): Promise<void> {
    let inTurn = 0;
    while (this.#state === 'running' && !this.#finishing) {
      try {
        this.#assertOwner();
        // Measured: a worker draining a backlog ran up to a whole read chunk or checkpoint
        // interval (64 messages) per turn, and requests waited behind it.
        if (inTurn >= this.#opts.deliveriesPerTurn) {
          inTurn = 0;
          await new Promise((r) => setImmediate(r));
        }
        if (this.#compactWaiters.length > 0) await this.#compactNow();
        const now = Date.now();
        const due = this.#nextDueRetry(now);
        if (due) {
          await this.#deliverRetry(due);
          inTurn++;
          continue;
        }
        const frame = await this.#nextFresh();
        if (frame) {
          await this.#deliverFresh(frame);
          inTurn++;
          continue;
        }
        inTurn = 0;
        // Caught up: the checkpoint is written now but synced at most every CHECKPOINT_SYNC_MS,
        // since under steady load the consumer catches up after every append batch and a sync
        // each time competed with the appenders' own syncs.
        await this.#flush(now - this.#syncedAt >= CHECKPOINT_SYNC_MS);
        // Idle first, then the wait for the last deliveries' records: a pool worker leaving when
        // idle frees its slot at once (its close waits for them), instead of holding it through
        // an audit commit per turn (measured: 1,000 queues of 100 drained at 0.54 of one queue
        // of the same total with the wait first, 0.85 without it).
        this.#opts.onIdle?.(this.#nextRetryDueMs());
        if (this.#finishing) break;
        // Asked in the background, not awaited: under steady load the consumer is caught up after
        // every append batch, and an awaited (hurried) barrier each time cost an audit spool write
        // a turn (measured, docs/performance.md, session 34). Its answer wakes this loop, which
        // then writes the checkpoint it allows.
        const behind = this.#ckSafe !== this.#cs.ck;
        if (behind) this.#askDurable();
        await this.#sleep(
          this.#logDirty || behind ? Math.min(CHECKPOINT_SYNC_MS, this.#idleWaitMs(now)) : this.#idleWaitMs(now),
        );
      } catch (err) {
        if (err instanceof LockLostError || this.#lockLost) {
          this.#stopAfterLockLoss();
          return;
        }
        this.#opts.onError?.(err);
        await this.#sleep(this.#opts.pollIntervalMs);
      }
    }
  }

  /** Ends this consumer without writing anything more: the new holder owns the checkpoint now. */
  #stopAfterLockLoss(): void {
    this.#state = 'closing';
    this.#pendingRecords = [];
    this.#ckWritten = this.#cs.ck;
    this.#logDirty = false;
    this.#opts.onLockLost?.();
  }

  #nextDueRetry(now: number): RetryEntry | undefined {
    let best: RetryEntry | undefined;
    for (const r of this.#cs.retries.values()) if (r.due <= now && (!best || r.due < best.due)) best = r;
    return best;
  }

  #nextRetryDueMs(): number | undefined {
    let due: number | undefined;
    for (const r of this.#cs.retries.values()) if (due === undefined || r.due < due) due = r.due;
    return due;
  }

  #idleWaitMs(now: number): number {
    let wait = this.#opts.pollIntervalMs;
    for (const r of this.#cs.retries.values()) wait = Math.min(wait, Math.max(0, r.due - now));
    return wait;
  }

  /** Waits `ms`, or less if notify() or close() comes first (a notify while busy skips the next wait). */
  #sleep(ms: number): Promise<void> {
    if (this.#notified || this.#state !== 'running' || this.#finishing) {
      this.#notified = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.#wake = () => {
        this.#notified = false;
        finish();
      };
    });
  }

  /** The segment read handle, reopened if compaction replaced the file. */
  async #segment(): Promise<FdFile | undefined> {
    let ino: number;
    try {
      // A path lookup answered from the dentry cache: on this thread, not worth a pool round trip.
      ino = statSync(this.paths.segment).ino;
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw err;
    }
    if (this.#seg && ino === this.#segIno) return this.#seg;
    this.#seg?.close();
    this.#seg = undefined;
    try {
      this.#seg = await FdFile.open(this.paths.segment, 'read');
    } catch (err) {
      // Drained between the look and the open.
      if (isErrno(err, 'ENOENT')) return undefined;
      throw err;
    }
    const { ino: openedIno, size } = fstatSync(this.#seg.fd);
    this.#segIno = openedIno;
    if (this.#cs.ck.off > size) {
      // Records read before a power loss took them: start again at what the disk holds.
      this.#cs.ck = { ...this.#cs.ck, off: size };
      this.#ckEpoch++;
      this.#ckSafe = this.#cs.ck;
      this.#readPos = size;
      this.#buffered = [];
    }
    return this.#seg;
  }

  async #nextFresh(): Promise<Frame<SegmentRecord> | undefined> {
    if (this.#buffered.length > 0) return this.#buffered.shift();
    this.#onFile = true;
    try {
      return await this.#readFresh();
    } finally {
      this.#onFile = false;
    }
  }

  async #readFresh(): Promise<Frame<SegmentRecord> | undefined> {
    const fh = await this.#segment();
    if (!fh) return undefined;
    // Records this process is still writing are visible before their write returns (O_DSYNC): read
    // only up to where that write began. Its commit offers them (offer), after their submissions
    // were answered and their queue_enqueued rows emitted, so in one process a message's row comes
    // before its delivery's (a poll that read them mid-write once logged the delivery first).
    const unsynced = this.#opts.unsyncedFrom?.();
    const size = unsynced === undefined ? sizeSync(fh) : Math.min(sizeSync(fh), unsynced);
    if (size <= this.#readPos) return undefined;
    let len = Math.min(SCAN_CHUNK_BYTES, size - this.#readPos);
    for (;;) {
      // What a busy queue appended since the last read is small and in the page cache: read on
      // this thread. A long backlog is read in 1 MiB steps by the pool.
      const buf =
        len <= SYNC_READ_MAX_BYTES ? readAtSync(fh, this.#readPos, len) : await readAt(fh, this.#readPos, len);
      const r = decodeFrames<SegmentRecord>(buf, this.#readPos);
      if (r.frames.length > 0) {
        this.#buffered = r.frames;
        this.#readPos += r.validBytes;
        return this.#buffered.shift();
      }
      if (
        r.stop === 'incomplete' &&
        r.needBytes !== undefined &&
        r.needBytes > len &&
        this.#readPos + r.needBytes <= size
      ) {
        len = r.needBytes;
        continue;
      }
      // A record cut short or failing its checksum: either a write still in progress or a tail
      // torn by a writer that died. Under the append lock no write is in progress, so what is
      // still bad then is torn, and is cut off.
      await this.#repairTailAt(fh);
      return undefined;
    }
  }

  async #repairTailAt(fh: FdFile): Promise<void> {
    // Not waited for: a held lock means a write may be in progress, and its commit wakes this
    // consumer; waiting would only stall appends, which hand the lock back to a waiter.
    const lock = await LockFile.tryAcquire(this.paths.appendLock, writeLockOptions(this.paths));
    if (!lock) return;
    try {
      const scan = await scanHandle(fh, this.#readPos, () => undefined);
      if (scan.stop !== 'end') {
        const w = await open(this.paths.segment, 'r+');
        try {
          lock.assertHeldSync();
          await w.truncate(scan.validEnd);
          await w.datasync();
        } finally {
          await w.close();
        }
      }
    } finally {
      await lock.release();
    }
  }

  async #runHandler(msg: QueueMessage): Promise<Outcome | 'abandoned'> {
    // Fenced here too, not only at the top of the loop: a worker stopped while it was reading
    // resumes with the read's records (written since by the new holder) and must not run them.
    this.#assertOwner();
    // Named to leave while it read (finish): its slot may already be another worker's (an idle
    // worker's is freed at once), so it starts nothing more; the next worker reads the message
    // again from the checkpoint, which has not passed it. As pg-queue-consumer.ts's #deliver.
    if (this.#finishing) return Promise.resolve('abandoned');
    return this.#inFlight.run(msg);
  }

  async #deliverFresh(frame: Frame<SegmentRecord>): Promise<void> {
    const r = frame.value;
    const msg: QueueMessage = {
      id: r.id,
      correlationId: r.correlation_id,
      enqueuedAt: r.enqueued_at,
      attempt: r.attempts + 1,
      payload: r.payload,
      isRetry: false,
      traceparent: r.traceparent,
      tracestate: r.tracestate,
    };
    // The outbox: a receipt another process was to record (it may have died first) is recorded
    // here before the delivery's own entries; the audit store keeps a message's first receipt.
    if (r.src !== undefined && r.w !== THIS_WRITER)
      this.#opts.onReceiptRead?.({ id: r.id, correlationId: r.correlation_id, offset: frame.offset, source: r.src });
    const outcome = await this.#runHandler(msg);
    if (outcome === 'abandoned') return;
    const ck = this.#cs.ck;
    let passed = false;
    try {
      await this.#settle(msg, outcome, (finished) => {
        passed = true;
        this.#cs.ck = {
          off: frame.end,
          first: frame.offset === 0 ? r.id : ck.first,
          n: ck.n + 1,
          done: doneCount(this.#cs) + (finished ? 1 : 0),
        };
      });
    } catch (err) {
      // Not passed (a dead letter that could not be written): deliver it again (at least once).
      // Once passed, the outcome is held in memory (checkpoint or retry schedule) and its record
      // waits for the next consumer-log write; delivering the frame again would run it twice
      // (measured on a full disk: one duplicate per failed write).
      if (!passed) this.#buffered.unshift(frame);
      throw err;
    }
  }

  async #deliverRetry(entry: RetryEntry): Promise<void> {
    const msg: QueueMessage = {
      id: entry.id,
      correlationId: entry.correlation_id,
      enqueuedAt: entry.enqueued_at,
      attempt: entry.attempts + 1,
      payload: entry.payload,
      isRetry: true,
      traceparent: entry.traceparent,
      tracestate: entry.tracestate,
    };
    const outcome = await this.#runHandler(msg);
    if (outcome === 'abandoned') return;
    await this.#settle(msg, outcome, (finished) => {
      this.#cs.retries.delete(entry.id);
      this.#pendingRecords.push({ t: 'rdone', id: entry.id });
      // Counted in the checkpoint, which the next consumer-log write carries.
      if (finished) this.#cs.ck = { ...this.#cs.ck, done: doneCount(this.#cs) + 1 };
    });
  }

  /**
   * Records an outcome. `passed` moves the message out of where it was (checkpoint past it, or
   * retry entry removed), told whether its delivery finished (acknowledged); it runs only once
   * whatever must be durable first (a dead letter) is.
   */
  async #settle(msg: QueueMessage, outcome: Outcome, passed: (finished: boolean) => void): Promise<void> {
    const s = settlementOf(msg, outcome, Date.now());
    if (s.kind === 'ack') {
      passed(true);
      this.#askDurable();
      // Measured draining a backlog on a 2-vCPU VM: an fdatasync every 64 acks left the event
      // loop idle a quarter of the time, and each hand-over to the pool cost it ~270 us more.
      if (++this.#unsynced >= this.#opts.checkpointEvery)
        await this.#flush(Date.now() - this.#syncedAt >= CHECKPOINT_SYNC_MS);
      return;
    }
    if (s.kind === 'retry') {
      const entry: RetryEntry = {
        id: msg.id,
        correlation_id: msg.correlationId,
        enqueued_at: msg.enqueuedAt,
        payload: msg.payload,
        attempts: s.attempts,
        due: s.dueMs,
        traceparent: msg.traceparent,
        tracestate: msg.tracestate,
      };
      passed(false);
      this.#cs.retries.set(entry.id, entry);
      this.#pendingRecords.push({ t: 'retry', entry });
      // The retry record moves the checkpoint past the message: it may not pass unrecorded deliveries.
      await this.#durableNow();
      await this.#flush(true);
      this.#opts.onAttemptFailed?.({
        message: msg,
        error: s.error,
        retryInMs: s.delayMs,
        deadLettered: false,
        fixed: s.fixed,
        step: s.step,
      });
      return;
    }
    // Dead: the dead letter is durable before the checkpoint passes the message.
    const error = s.error;
    await addDeadLetter(this.paths, {
      id: msg.id,
      payload: msg.payload,
      enqueued_at: msg.enqueuedAt,
      failed_at: new Date().toISOString(),
      attempts: msg.attempt,
      last_error: error,
    });
    passed(false);
    await this.#durableNow();
    await this.#flush(true);
    const step = s.step;
    this.#opts.onAttemptFailed?.({ message: msg, error, retryInMs: undefined, deadLettered: true, fixed: false, step });
    this.#opts.onDeadLettered?.({ message: msg, error, attempts: msg.attempt, step });
    // Its audit entry committed before the next delivery (a crash within this wait leaves the dead letter without it).
    await this.#durableNow(true);
  }

  /**
   * Asks in the background, unless already asking, for the deliveries so far to be made durable
   * (recordsDurableSoon: no hurry); the checkpoint written follows, and a loop idle meanwhile is
   * woken to write it.
   */
  #askDurable(): void {
    const durable = this.#opts.recordsDurableSoon ?? this.#opts.recordsDurable;
    if (durable === undefined) {
      this.#ckSafe = this.#cs.ck;
      return;
    }
    if (this.#barrier !== undefined) return;
    const target = this.#cs.ck;
    const epoch = this.#ckEpoch;
    this.#barrier = durable()
      .catch(() => undefined)
      .then(() => {
        this.#barrier = undefined;
        if (epoch === this.#ckEpoch && target.off >= this.#ckSafe.off) this.#ckSafe = target;
        this.#wake?.();
      });
  }

  /**
   * Waits until the deliveries so far are durable; the checkpoint written may then pass them all.
   * @param always wait even when the checkpoint is already safe (records of a settlement made since: a dead letter's)
   */
  async #durableNow(always = false): Promise<void> {
    const durable = this.#opts.recordsDurable;
    const target = this.#cs.ck;
    const epoch = this.#ckEpoch;
    if (durable !== undefined && (always || target !== this.#ckSafe)) await durable().catch(() => undefined);
    if (epoch === this.#ckEpoch) this.#ckSafe = target;
  }

  /**
   * Writes pending records and the checkpoint (if it moved) to the consumer log; with `sync`,
   * everything written so far is durable when it returns.
   */
  async #flush(sync: boolean): Promise<void> {
    if (this.#lockLost) return;
    const records = this.#pendingRecords;
    const ck = this.#ckSafe;
    if (records.length > 0 || ck !== this.#ckWritten) this.#assertOwner();
    if (ck !== this.#ckWritten) records.push({ t: 'ck', ck });
    if (records.length > 0) {
      this.#pendingRecords = [];
      try {
        await this.#log.append(records, sync);
      } catch (err) {
        this.#pendingRecords = records.concat(this.#pendingRecords);
        throw err;
      }
      this.#ckWritten = ck;
      this.#unsynced = 0;
      this.#logDirty = !sync;
    } else if (sync && this.#logDirty) {
      await this.#log.sync();
      this.#logDirty = false;
    }
    if (sync) this.#syncedAt = Date.now();
  }

  async #compactNow(): Promise<void> {
    const waiters = this.#compactWaiters.splice(0);
    let drained = false;
    let cutBytes = 0;
    this.#onFile = true;
    try {
      // Synced first: a prefix cut copies from the checkpoint on disk (prefix-cut.ts).
      await this.#durableNow();
      await this.#flush(true);
      if (this.#buffered.length === 0) drained = await drainIfEmpty(this.paths, this.#log, this.#cs);
      if (drained) {
        this.#readPos = 0;
        this.#ckEpoch++;
        this.#ckSafe = this.#cs.ck;
        this.#ckWritten = this.#cs.ck;
      } else if ((cutBytes = await cutProcessedPrefix(this.paths, this.#log, this.#cs, this.#opts.prefixCut)) > 0) {
        // The records read ahead are in the new file too, `cutBytes` earlier.
        this.#readPos -= cutBytes;
        this.#buffered = this.#buffered.map((f) => ({
          offset: f.offset - cutBytes,
          end: f.end - cutBytes,
          value: f.value,
        }));
        this.#ckEpoch++;
        this.#ckSafe = this.#cs.ck;
        this.#ckWritten = this.#cs.ck;
        this.#seg?.close();
        this.#seg = undefined;
        this.#segIno = -1;
      } else if (this.#log.bytes > 1024 * 1024) {
        await this.#log.rewrite(this.#cs);
      }
    } finally {
      this.#onFile = false;
      for (const w of waiters) w({ drained, cutBytes });
    }
  }
}

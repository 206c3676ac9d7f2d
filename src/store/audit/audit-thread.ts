/**
 * The server's audit writer: entries are prepared (time, correlation id, payload text) on the
 * calling thread and queued; a worker thread appends them to `audit.db` in IMMEDIATE transactions
 * with full sync, so the event loop never waits on the chain's fsync. A failed batch stays queued
 * in the worker and is retried every second, in order.
 *
 * With a spool (`spoolDir`), each batch is also appended to this process's spool file with one
 * synced write, at the same time as it goes to the worker, and an entry counts as durable once that
 * write returns: an acknowledgement waits for it instead of the chain's commit (audit-spool.ts).
 *
 * Except a batch of covered entries alone (appendCovered) that nothing hurries: until chained, each
 * is stood for by something else should this process die first. A message's receipt is held
 * durably by its queue record (the outbox) and chained from it again, once, by whoever reads the
 * record next; a delivery's outcome is waited for by the delivery's checkpoint (committedSoon), so
 * the message is delivered again. Only this process's own worker can pass such a record for good
 * (its checkpoint), and it does so only after waiting for the entries of the deliveries: so the
 * spool write that ends any hurried wait carries every entry handed over unspooled and not yet
 * chained, ahead of the batch, under the spool number it was handed over with (the worker moves
 * the spool's mark past an entry when it chains it, spooled or not), and a wait that is not hurried
 * ends when the worker chains them (or, should the chain not reach them within PATIENCE_MS, a
 * failing one included, with such a spool write). A receipt chained twice that way (from the
 * worker and from a dead process's spool) is claimed once by the audit store.
 */
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import { AuditSpool } from './audit-spool.js';
import { LogThrottle } from '../../common/log-throttle.js';
import { CommitTickets } from './commit-tickets.js';
import { UnspooledEntries } from './unspooled-entries.js';
import {
  PACKED_WIDTH,
  packAuditEntries,
  prepareAuditEntry,
  type AuditEntryInput,
  type PreparedAuditEntry,
} from '../contracts/index.js';

/** What the request path needs of an audit writer. */
export interface AuditAppender {
  /** Queues one entry; never waits. */
  append(input: AuditEntryInput): void;
  /**
   * As append, for an entry something else stands for until it is chained, so that it need not be
   * written to the spool unless a hurried wait (committed) follows it: the `queue.message.enqueued`
   * entry of a message whose queue record carries it (the outbox, docs/operations.md), and a
   * delivery's `queue.message.processed`, whose checkpoint waits for it (committedSoon): a process
   * that dies before chaining it delivers the message again (at least once).
   */
  appendCovered(input: AuditEntryInput): void;
  /**
   * Resolves once every entry appended so far is durable (the batch goes at the end of this turn,
   * ahead of its timer): committed to the chain, or, with the SQLite writer's spool, in this
   * process's spool file, from which it is chained right after (and by the next server on the state
   * directory if this process dies first). For progress that must not be made durable before the
   * entries recorded for it (a queue delivery's checkpoint). Also resolves, not durable, when the
   * writer fails a batch or after COMMIT_WAIT_MS (CommitTickets); never rejects.
   */
  committed(): Promise<void>;
  /**
   * As committed, without hurrying the batch: the entries are usually chained at the writer's own
   * pace (one commit for many batches), and written to the spool (as committed would) only should
   * the chain not reach them within PATIENCE_MS (a failing chain included). For progress that may
   * lag behind its entries (a queue delivery's checkpoint, asked while deliveries go on).
   */
  committedSoon(): Promise<void>;
}

/**
 * How long a wait that is not hurried (committedSoon) leaves its entries to the writer's pace: the
 * worker lets entries already covered linger 10 ms before their commit, which syncs three times.
 * Milliseconds.
 */
export const PATIENCE_MS = 50;

/**
 * `entries` is a packed batch (packAuditEntries): strings clone far faster than objects. A spooled
 * batch names its spool and the sequence number of its first entry there (`spool`, `firstSeq`).
 * `held`: covered entries alone (appendCovered), numbered in the spool but not written to it, each
 * stood for by its queue record or its delivery's checkpoint until chained (they may wait for a
 * commit, and do not count as spooled in `written`).
 * `forget`: a spool file of this process is gone (retired), its mark can go. `written`: a commit of
 * `count` entries, `spooled` of them from a spool, the highest spool number among them `lastSeq` (0: none).
 */
export type AuditThreadRequest =
  | { type: 'append'; entries: string[]; spool?: string; firstSeq?: number; held?: true }
  | { type: 'flush'; id: number }
  | { type: 'close'; id: number }
  | { type: 'forget'; spool: string };
export type AuditThreadReply =
  | { type: 'done'; id: number }
  | { type: 'error'; message: string }
  | { type: 'written'; count: number; spooled: number; lastSeq: number; seconds: number };

export interface AuditThreadOptions {
  /** Longest an entry waits before its batch is handed to the worker, in ms. @default 5 */
  flushIntervalMs?: number;
  /** Told of each failed write in the worker (the batch is retried). */
  onError?: (message: string) => void;
  /** Told of each batch committed: its entries and how long the commit took, in seconds (metrics). */
  onBatchWritten?: (entries: number, seconds: number) => void;
  /**
   * Where this process's audit spool goes (`<stateDir>/audit-spool`): entries count as durable once
   * spooled. Without it, only once committed to the chain.
   */
  spoolDir?: string;
  /** A spool file holding more than this is replaced by a new one, and removed once chained. Bytes. @default 64 MiB */
  spoolRotateBytes?: number;
  /** How long a wait that is not hurried (committedSoon) leaves its entries to the writer's pace. Milliseconds. @default PATIENCE_MS */
  patienceMs?: number;
}

/** A spool file replaced by a newer one: removed once its last entry is chained. */
interface RetiringSpool {
  readonly spool: AuditSpool;
  readonly lastSeq: number;
}

export class AuditThreadWriter implements AuditAppender {
  readonly #worker: Worker;
  readonly #intervalMs: number;
  readonly #waiters = new Map<number, () => void>();
  #queue: PreparedAuditEntry[] = [];
  /** Every entry queued is covered (appendCovered): the batch may go without a spool write. */
  #queueHeld = true;
  /** A hurried wait (committed) follows the entries queued: the batch is spooled, covered ones alone too. */
  #queueWaited = false;
  #timer: NodeJS.Timeout | undefined;
  #nextId = 1;
  #closed: Promise<void> | undefined;
  /** Entries handed to the worker and not yet committed. */
  #unwritten = 0;
  readonly #tickets = new CommitTickets();
  #immediate: NodeJS.Immediate | undefined;
  readonly #onError: (message: string) => void;
  /** This process's spool, once open; undefined without one (or when it could not be made). */
  #spool: AuditSpool | undefined;
  #spoolOpening: Promise<void> | undefined;
  readonly #spoolRotateBytes: number;
  readonly #patienceMs: number;
  /** Spool numbers given (to every entry handed over while there is a spool), and the highest chained. */
  #spooledSeq = 0;
  #chainedSeq = 0;
  /** Entries handed over without a spool write, and which of them a spool write must still carry. */
  readonly #unspooled = new UnspooledEntries();
  /** A spool write (or rotation) in flight: the next batch waits for it, so spool order is append order. */
  #spoolBusy: Promise<void> | undefined;
  #retiring: RetiringSpool[] = [];
  /** Waits for the chain to reach a spooled entry (after a failed spool write): tickets are spool numbers. */
  readonly #chainTickets = new CommitTickets();
  readonly #spoolFailures = new LogThrottle();

  constructor(auditDb: string, opts: AuditThreadOptions = {}) {
    this.#intervalMs = opts.flushIntervalMs ?? 5;
    this.#spoolRotateBytes = opts.spoolRotateBytes ?? 64 * 1024 * 1024;
    this.#patienceMs = opts.patienceMs ?? PATIENCE_MS;
    const onError = opts.onError ?? ((m: string) => process.stderr.write(`audit: ${m}\n`));
    this.#onError = onError;
    if (opts.spoolDir !== undefined) {
      this.#spoolOpening = AuditSpool.open(opts.spoolDir).then(
        (spool) => {
          this.#spool = spool;
        },
        (err: unknown) =>
          onError(`audit spool not opened (acknowledgements wait for the chain's commit): ${errorText(err)}`),
      );
    }
    this.#worker = new Worker(new URL('./audit-thread-worker.js', import.meta.url), { workerData: { auditDb } });
    this.#worker.unref();
    this.#worker.on('message', (reply: AuditThreadReply) => {
      if (reply.type === 'error') {
        // Spooled entries are durable already: their waits ended with the spool's write. Those whose
        // spool write failed, or without a spool, end now (CommitTickets: a failure ends the wait).
        if (this.#spool === undefined) this.#tickets.failed();
        this.#chainTickets.failed();
        return onError(reply.message);
      }
      if (reply.type === 'written') {
        this.#unwritten -= reply.count;
        if (reply.lastSeq > this.#chainedSeq) {
          const passed = reply.lastSeq - this.#chainedSeq;
          this.#chainedSeq = reply.lastSeq;
          this.#removeRetired();
          this.#chainTickets.committed(passed);
        }
        if (reply.count > reply.spooled) this.#tickets.committed(this.#unspooled.chained(reply.count - reply.spooled));
        opts.onBatchWritten?.(reply.count, reply.seconds);
        return;
      }
      this.#waiters.get(reply.id)?.();
      this.#waiters.delete(reply.id);
      if (this.#waiters.size === 0) this.#worker.unref();
    });
    this.#worker.on('error', (err) => onError(err.message));
  }

  /** Entries appended and not yet committed (waiting here, or in the worker, retrying after a failure included). */
  get queuedEntries(): number {
    return this.#queue.length + this.#unwritten;
  }

  /** Queues one entry; never blocks. Its created_at and correlation id are fixed now. */
  append(input: AuditEntryInput): void {
    if (this.#enqueue(input)) this.#queueHeld = false;
  }

  appendCovered(input: AuditEntryInput): void {
    this.#enqueue(input);
  }

  /** Queues the entry for the next batch (false, dropped, once closing). */
  #enqueue(input: AuditEntryInput): boolean {
    if (this.#closed !== undefined) return false;
    this.#queue.push(prepareAuditEntry(input));
    this.#tickets.issue();
    this.#timer ??= setTimeout(() => this.#send(), this.#intervalMs).unref();
    return true;
  }

  committed(): Promise<void> {
    return this.#tickets.waitHurried(this.#tickets.appended, this.#hurry);
  }

  committedSoon(): Promise<void> {
    return this.#tickets.waitPatient(this.#tickets.appended, this.#patienceMs, this.#hurry);
  }

  /** Every wait of this turn goes in one batch: one commit covers them all. */
  readonly #hurry = (): void => {
    this.#queueWaited = true;
    this.#immediate ??= setImmediate(() => {
      this.#immediate = undefined;
      this.#send();
    });
  };

  /** Resolves once every entry appended before the call is committed. */
  async flush(): Promise<void> {
    await this.#handOverAll();
    return this.#request('flush');
  }

  /** Flushes, then stops the worker; removes the spool files, every entry of them chained. Runs once. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#handOverAll();
      await this.#request('close');
      await this.#worker.terminate();
      const spool = this.#spool;
      this.#spool = undefined;
      // The worker stopped with nothing pending: what it could not chain (a failed database) stays spooled.
      const allChained = this.#chainedSeq === this.#spooledSeq;
      for (const r of this.#retiring.splice(0)) await r.spool.close(allChained).catch(() => undefined);
      await spool?.close(allChained).catch(() => undefined);
    })();
    return this.#closed;
  }

  /** Hands every queued entry to the worker, the spool's writes in flight awaited. */
  async #handOverAll(): Promise<void> {
    this.#send();
    while (this.#spoolBusy !== undefined) {
      await this.#spoolBusy;
      this.#send();
    }
  }

  #send(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#sendDue()) return;
    // One spool write at a time, so the spool's order is the append order (the next batch is sent as it ends).
    if (this.#spoolBusy !== undefined) return;
    if (this.#spoolOpening !== undefined) {
      this.#busyUntil(this.#spoolOpening.then(() => (this.#spoolOpening = undefined)));
      return;
    }
    const entries = this.#queue;
    const held = this.#queueHeld && !this.#queueWaited;
    this.#queue = [];
    this.#queueHeld = true;
    this.#queueWaited = false;
    this.#unwritten += entries.length;
    const packed = packAuditEntries(entries);
    const spool = this.#spool;
    // Numbered in the spool whether written to it now or not: an entry written there later keeps
    // its number, and the worker moves the spool's mark past it when it chains it either way.
    const firstSeq = this.#spooledSeq + 1;
    if (spool !== undefined) this.#spooledSeq += entries.length;
    if (spool === undefined || held) {
      // Durable once chained (or, covered entries, stood for until then: appendCovered).
      this.#unspooled.handedOver(packed, firstSeq);
      this.#worker.postMessage({
        type: 'append',
        entries: packed,
        ...(spool === undefined ? {} : { spool: spool.name, firstSeq, held: true as const }),
      } satisfies AuditThreadRequest);
      return;
    }
    // Entries handed over unspooled and not chained yet go first in this write, under the numbers
    // they were handed over with, so that what waits for this batch (a delivery's checkpoint, which
    // may pass their records and deliveries) waits for them too. Theirs and the batch's numbers run on unbroken.
    const again = this.#unspooled.takeOwed();
    const from = again.packed.length === 0 ? firstSeq : again.firstSeq;
    const count = again.packed.length / PACKED_WIDTH + entries.length;
    // To the worker at once: the chain's commit and the spool's write run side by side.
    if (entries.length > 0)
      this.#worker.postMessage({
        type: 'append',
        entries: packed,
        spool: spool.name,
        firstSeq,
      } satisfies AuditThreadRequest);
    this.#busyUntil(
      spool
        .write(from, again.packed.length === 0 ? packed : again.packed.concat(packed))
        .then(
          () => this.#tickets.committed(count),
          (err: unknown) => {
            // Not durable in the spool (a torn record, if any, is skipped by a recovery): their
            // acknowledgements wait for the chain's commit instead, as without a spool, and the
            // next batches wait behind them, so the count of durable entries stays in order.
            this.#reportSpoolFailure(err);
            return this.#chainTickets.wait(from + count - 1).then(() => this.#tickets.committed(count));
          },
        )
        .then(() => this.#rotateIfFull()),
    );
  }

  /** Entries are queued, or a wait needs the entries handed over unspooled written to the spool. */
  #sendDue(): boolean {
    return this.#queue.length > 0 || (this.#queueWaited && this.#spool !== undefined && this.#unspooled.owedCount > 0);
  }

  /** One line per 10 s at most: a full disk fails every batch. */
  #reportSpoolFailure(err: unknown): void {
    const line = this.#spoolFailures.admit('spool');
    if (line === undefined) return;
    const more = line.heldBack > 0 ? ` (${line.heldBack} more since the last such line)` : '';
    this.#onError(
      `audit spool write failed; acknowledgements wait for the chain's commit instead: ${errorText(err)}${more}`,
    );
  }

  /** Sends nothing else until `step` ends, then what queued meanwhile. */
  #busyUntil(step: Promise<unknown>): void {
    this.#spoolBusy = step.then(
      () => undefined,
      (err: unknown) => this.#onError(`audit spool: ${errorText(err)}`),
    );
    void this.#spoolBusy.then(() => {
      this.#spoolBusy = undefined;
      if (this.#sendDue()) this.#send();
    });
  }

  /** A spool past its size goes on in a new file; the old one is removed once its last entry is chained. */
  async #rotateIfFull(): Promise<void> {
    const old = this.#spool;
    if (old === undefined || old.size < this.#spoolRotateBytes || this.#closed !== undefined) return;
    this.#spool = await AuditSpool.open(dirname(old.path));
    this.#retiring.push({ spool: old, lastSeq: this.#spooledSeq });
    this.#removeRetired();
  }

  /** Removes the retired spool files whose entries are all chained, and their marks. */
  #removeRetired(): void {
    while (this.#retiring.length > 0 && this.#retiring[0]!.lastSeq <= this.#chainedSeq) {
      const { spool } = this.#retiring.shift()!;
      spool.close(true).then(
        () => this.#worker.postMessage({ type: 'forget', spool: spool.name } satisfies AuditThreadRequest),
        (err: unknown) => this.#onError(`audit spool ${spool.path} not removed: ${errorText(err)}`),
      );
    }
  }

  #request(type: 'flush' | 'close'): Promise<void> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#waiters.set(id, resolve);
      this.#worker.ref();
      this.#worker.postMessage({ type, id } satisfies AuditThreadRequest);
    });
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

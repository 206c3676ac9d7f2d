/**
 * Batching audit writer for the request path: append() only queues; queued entries are chained
 * and written together in one IMMEDIATE transaction every few milliseconds or every N entries, so
 * a burst of requests shares one commit (one fsync) instead of paying one each.
 */
import { StorageUnavailableError, SvcError } from '../common/errors.js';
import { prepareAuditEntry, type AuditEntryInput, type AuditRepo, type PreparedAuditEntry } from './audit-repo.js';

export interface AuditWriterOptions {
  /** Longest a queued entry waits before its batch is written, in ms. @default 5 */
  flushIntervalMs?: number;
  /** A queue this long is written on the next turn of the event loop, and no batch is longer. @default 256 */
  maxBatch?: number;
  /** Entries held while the database refuses writes; further entries are dropped and reported. @default 100000 */
  maxQueued?: number;
  /** Wait before retrying after a failed write, in ms. @default 1000 */
  retryDelayMs?: number;
  /**
   * Told of each failed background write (its entries stay queued and are retried) and of each
   * entry dropped because the queue is full (`dropped` non-empty).
   */
  onError?: (err: unknown, dropped: readonly PreparedAuditEntry[]) => void;
}

/** 'open' -> 'closed'; close() flushes once and later appends are refused. */
export type AuditWriterState = 'open' | 'closed';

export class AuditWriter {
  readonly #repo: AuditRepo;
  readonly #flushIntervalMs: number;
  readonly #maxBatch: number;
  readonly #maxQueued: number;
  readonly #retryDelayMs: number;
  readonly #onError: NonNullable<AuditWriterOptions['onError']>;
  #queue: PreparedAuditEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #state: AuditWriterState = 'open';
  /** Set after a failed background write: batches then wait for the retry timer, not the next append. */
  #failing = false;

  constructor(repo: AuditRepo, opts: AuditWriterOptions = {}) {
    this.#repo = repo;
    this.#flushIntervalMs = opts.flushIntervalMs ?? 5;
    this.#maxBatch = Math.max(1, opts.maxBatch ?? 256);
    this.#maxQueued = Math.max(this.#maxBatch, opts.maxQueued ?? 100_000);
    this.#retryDelayMs = opts.retryDelayMs ?? 1000;
    this.#onError = opts.onError ?? (() => {});
  }

  get state(): AuditWriterState {
    return this.#state;
  }

  /** Entries queued and not yet written. */
  get pending(): number {
    return this.#queue.length;
  }

  /**
   * Queues an entry; never blocks. Its `created_at` and default correlation id are fixed now,
   * and the payload is serialised now (later changes to the object are not recorded).
   */
  append(input: AuditEntryInput): void {
    if (this.#state !== 'open') throw new SvcError('SVC_ERR_INTERNAL', 'audit writer is closed');
    const entry = prepareAuditEntry(input);
    if (this.#queue.length >= this.#maxQueued) {
      this.#onError(new StorageUnavailableError(`audit queue is full (${this.#maxQueued} entries waiting); entry dropped`), [entry]);
      return;
    }
    this.#queue.push(entry);
    if (this.#queue.length >= this.#maxBatch && !this.#failing) {
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        this.#background();
      });
    } else {
      this.#schedule(this.#flushIntervalMs);
    }
  }

  /**
   * Writes everything queued now, in batches of at most maxBatch entries, one IMMEDIATE
   * transaction each. Returns how many entries were written. On failure the unwritten entries stay
   * queued (in order) and the error is thrown.
   */
  flush(): number {
    this.#cancelTimers();
    let written = 0;
    while (this.#queue.length > 0) {
      const batch = this.#queue.slice(0, this.#maxBatch);
      this.#repo.appendPrepared(batch);
      this.#queue = this.#queue.slice(batch.length);
      written += batch.length;
    }
    return written;
  }

  /** Flushes and refuses further appends. Idempotent; throws if the final flush fails. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.flush();
  }

  #schedule(delayMs: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#background();
    }, delayMs);
    // A pending audit batch alone must not keep the process alive; close() writes it.
    this.#timer.unref();
  }

  #cancelTimers(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }

  #background(): void {
    try {
      this.flush();
      this.#failing = false;
    } catch (err) {
      this.#failing = true;
      this.#onError(err, []);
      if (this.#queue.length > 0) this.#schedule(this.#retryDelayMs);
    }
  }
}

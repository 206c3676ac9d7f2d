/**
 * The server's audit writer: entries are prepared (time, correlation id, payload text) on the
 * calling thread and queued; a worker thread appends them to `audit.db` in IMMEDIATE transactions
 * with full sync, so the event loop never waits on the chain's fsync. A failed batch stays queued
 * in the worker and is retried every second, in order.
 */
import { Worker } from 'node:worker_threads';
import { CommitTickets } from './commit-tickets.js';
import {
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
   * Queues one entry and resolves once it is committed (written ahead of the batch timer): for an
   * acknowledgement that must not go out without its entry (a 202 of /enqueue). Also resolves,
   * uncommitted, when the writer fails a batch or after COMMIT_WAIT_MS (CommitTickets); never rejects.
   */
  appendCommitted(input: AuditEntryInput): Promise<void>;
  /** Resolves once every entry appended so far is committed (the batch goes at the end of this turn); ends as appendCommitted. */
  committed(): Promise<void>;
}

/** `entries` is a packed batch (packAuditEntries): strings clone far faster than objects. */
export type AuditThreadRequest =
  { type: 'append'; entries: string[] } | { type: 'flush'; id: number } | { type: 'close'; id: number };
export type AuditThreadReply =
  | { type: 'done'; id: number }
  | { type: 'error'; message: string }
  | { type: 'written'; count: number; seconds: number };

export interface AuditThreadOptions {
  /** Longest an entry waits before its batch is handed to the worker, in ms. @default 5 */
  flushIntervalMs?: number;
  /** Told of each failed write in the worker (the batch is retried). */
  onError?: (message: string) => void;
  /** Told of each batch committed: its entries and how long the commit took, in seconds (metrics). */
  onBatchWritten?: (entries: number, seconds: number) => void;
}

export class AuditThreadWriter implements AuditAppender {
  readonly #worker: Worker;
  readonly #intervalMs: number;
  readonly #waiters = new Map<number, () => void>();
  #queue: PreparedAuditEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #nextId = 1;
  #closed: Promise<void> | undefined;
  /** Entries handed to the worker and not yet committed. */
  #unwritten = 0;
  readonly #tickets = new CommitTickets();
  #immediate: NodeJS.Immediate | undefined;

  constructor(auditDb: string, opts: AuditThreadOptions = {}) {
    this.#intervalMs = opts.flushIntervalMs ?? 5;
    const onError = opts.onError ?? ((m: string) => process.stderr.write(`audit: ${m}\n`));
    this.#worker = new Worker(new URL('./audit-thread-worker.js', import.meta.url), { workerData: { auditDb } });
    this.#worker.unref();
    this.#worker.on('message', (reply: AuditThreadReply) => {
      if (reply.type === 'error') {
        this.#tickets.failed();
        return onError(reply.message);
      }
      if (reply.type === 'written') {
        this.#unwritten -= reply.count;
        this.#tickets.committed(reply.count);
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
    if (this.#closed !== undefined) return;
    this.#queue.push(prepareAuditEntry(input));
    this.#tickets.issue();
    this.#timer ??= setTimeout(() => this.#send(), this.#intervalMs).unref();
  }

  /** Queues one entry, handed to the worker at the end of this turn, and resolves once it is committed. */
  appendCommitted(input: AuditEntryInput): Promise<void> {
    if (this.#closed !== undefined) return Promise.reject(new Error('the audit writer is closed'));
    this.#queue.push(prepareAuditEntry(input));
    return this.#tickets.waitHurried(this.#tickets.issue(), this.#hurry);
  }

  committed(): Promise<void> {
    return this.#tickets.waitHurried(this.#tickets.appended, this.#hurry);
  }

  /** Every acknowledgement of this turn goes in one batch: one commit covers them all. */
  readonly #hurry = (): void => {
    this.#immediate ??= setImmediate(() => {
      this.#immediate = undefined;
      this.#send();
    });
  };

  /** Resolves once every entry appended before the call is committed. */
  flush(): Promise<void> {
    this.#send();
    return this.#request('flush');
  }

  /** Flushes, then stops the worker. Runs once. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#send();
      await this.#request('close');
      await this.#worker.terminate();
    })();
    return this.#closed;
  }

  #send(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#queue.length === 0) return;
    const entries = this.#queue;
    this.#queue = [];
    this.#unwritten += entries.length;
    this.#worker.postMessage({ type: 'append', entries: packAuditEntries(entries) } satisfies AuditThreadRequest);
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

/**
 * The service's audit appender on PostgreSQL: entries are queued without waiting (their time and
 * correlation id fixed at once, as with the SQLite writer thread) and written every
 * `flushIntervalMs` in one transaction, chained under each tenant's head row lock, so several
 * nodes appending at once still build one chain per tenant. A batch that fails (the database is
 * away) is kept, in order, and tried again; nothing queued is dropped.
 */
import type { AuditAppender } from './audit-thread.js';
import { CommitTickets } from './commit-tickets.js';
import { appendAuditIn } from '../pg/pg-audit-store.js';
import type { PgDb } from '../pg/pg-db.js';
import { prepareAuditEntry, type AuditEntryInput, type PreparedAuditEntry } from '../contracts/index.js';

export interface PgAuditWriterOptions {
  /** @default 5 */
  readonly flushIntervalMs?: number;
  /** How long a failed batch waits before it is tried again. @default 1000 */
  readonly retryMs?: number;
  readonly onError?: (message: string) => void;
  readonly onBatchWritten?: (entries: number, seconds: number) => void;
}

export class PgAuditWriter implements AuditAppender {
  readonly #db: PgDb;
  readonly #intervalMs: number;
  readonly #retryMs: number;
  readonly #opts: PgAuditWriterOptions;
  #queue: PreparedAuditEntry[] = [];
  #writing: PreparedAuditEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  readonly #tickets = new CommitTickets();
  /** An acknowledgement waits for an entry queued: the next batch goes at once, not after the interval. */
  #urgent = false;

  constructor(db: PgDb, opts: PgAuditWriterOptions = {}) {
    this.#db = db;
    this.#intervalMs = opts.flushIntervalMs ?? 5;
    this.#retryMs = opts.retryMs ?? 1000;
    this.#opts = opts;
  }

  /** Entries appended and not yet committed. */
  get queuedEntries(): number {
    return this.#queue.length + this.#writing.length;
  }

  append(input: AuditEntryInput): void {
    if (this.#closed) return;
    this.#queue.push(prepareAuditEntry(input));
    this.#tickets.issue();
    this.#schedule(this.#intervalMs);
  }

  /** On PostgreSQL a message's entry commits with it (pg-appender.ts); one handed back, or a delivery's, is appended as any. */
  appendCovered(input: AuditEntryInput): void {
    this.append(input);
  }

  committed(): Promise<void> {
    return this.#tickets.waitHurried(this.#tickets.appended, this.#hurry);
  }

  /** Nothing to spare on PostgreSQL (no spool): as committed. */
  committedSoon(): Promise<void> {
    return this.committed();
  }

  /** The next batch goes at once, not after the interval. */
  readonly #hurry = (): void => {
    this.#urgent = true;
    // A batch failing waits for its retry: an acknowledgement does not hurry a database that is away.
    if (this.#timer !== undefined && this.#writing.length === 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#schedule(0);
  };

  /** Resolves once every entry appended before the call is committed (it keeps trying until then). */
  async flush(): Promise<void> {
    while (this.#queue.length > 0 || this.#writing.length > 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      await (this.#running ??= this.#write());
      if (this.#writing.length > 0) await new Promise((r) => setTimeout(r, this.#retryMs).unref());
    }
  }

  /** Flushes what is queued (giving up after `timeoutMs` while the database stays away), then stops. */
  async close(timeoutMs = 5000): Promise<void> {
    this.#closed = true;
    await Promise.race([this.flush(), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    clearTimeout(this.#timer);
    if (this.queuedEntries > 0)
      this.#opts.onError?.(
        `${this.queuedEntries} audit entries not written: the PostgreSQL store stayed unavailable while the service stopped`,
      );
  }

  #schedule(ms: number): void {
    if (this.#timer !== undefined || this.#running !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running ??= this.#write();
    }, ms).unref();
  }

  async #write(): Promise<void> {
    try {
      if (this.#writing.length === 0) {
        this.#writing = this.#queue;
        this.#queue = [];
        this.#urgent = false;
      }
      const batch = this.#writing;
      if (batch.length === 0) return;
      const started = performance.now();
      try {
        await this.#db.transaction((tx) => appendAuditIn(tx, batch));
        this.#writing = [];
        this.#tickets.committed(batch.length);
        this.#opts.onBatchWritten?.(batch.length, (performance.now() - started) / 1000);
      } catch (err) {
        this.#tickets.failed();
        this.#opts.onError?.(
          `audit batch of ${batch.length} entries not written (tried again in ${this.#retryMs} ms): ${(err as Error).message}`,
        );
      }
    } finally {
      this.#running = undefined;
      if (this.#writing.length > 0) this.#schedule(this.#retryMs);
      else if (this.#queue.length > 0) this.#schedule(this.#urgent ? 0 : this.#intervalMs);
    }
  }
}

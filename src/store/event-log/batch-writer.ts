/**
 * What both event log writers share, log.db's (EventLogSink) and PostgreSQL's (PgEventWriter):
 * batches written strictly in order, each to the database and then to the daily JSON Lines files
 * (even when the database refused it), retention passes one after the other beside them, a stop
 * that ends the running pass at its next slice, and a close that waits for both.
 */
import { DailyJsonlWriter } from './daily-files.js';
import type { RowColumns } from './event-log-row.js';
import type { Aggregates } from '../contracts/rollups.js';

/** Row ids per DELETE slice and pages per incremental-vacuum slice of a retention pass. */
export interface RowRetentionRequest {
  /** Rows whose `ts` is before this ISO 8601 UTC instant are deleted. */
  cutoffIso: string;
  sliceRows: number;
  vacuumPagesPerSlice?: number;
}

/** What a retention pass of the rows did. */
export interface RowRetentionStats {
  rowsDeleted: number;
  /** Pages of log.db given back to the file system (incremental vacuum). */
  pagesFreed: number;
  /** Longest single DELETE slice and incremental-vacuum slice, in ms: the longest a batch waited for them. */
  longestDeleteSliceMs: number;
  longestVacuumSliceMs: number;
  /** Stopped before the end (shutdown); the next pass carries on. */
  stopped: boolean;
  /** PostgreSQL: whole day partitions dropped (their rows are counted in `rowsDeleted`). */
  partitionsDropped?: number;
}

/** Where EventLog's batches go: the SQLite sink (in a worker thread or inline), or PostgreSQL. */
export interface EventLogBackend {
  /**
   * Hands over rows of the open batch ahead of it (EventLog's chunks): they are written with the
   * next `write`'s rows, before them, in the same batch. Not answered: the write reports them.
   */
  stage(chunk: RowColumns): void;
  /** Writes a packed batch, after the chunks staged since the last write; batches are written in the order they were given. */
  write(batch: RowColumns): Promise<void>;
  /** Adds per-minute rollups and queue samples to the store's (contracts/rollups.ts), in order with the batches. */
  writeAggregates(a: Aggregates): Promise<void>;
  retain(request: RowRetentionRequest): Promise<RowRetentionStats>;
  /** Ends a running retention pass at its next slice. */
  stopRetention(): void;
  /**
   * The log is closing: a writer holding batches through an outage (PostgreSQL) stops waiting for
   * the database after a grace period, so a stop is never held up for good. @default nothing
   */
  closing?(): void;
  close(): Promise<void>;
}

/** The stats of a pass that did nothing: the writer is closing. */
const CLOSED_PASS: Readonly<RowRetentionStats> = {
  rowsDeleted: 0,
  pagesFreed: 0,
  longestDeleteSliceMs: 0,
  longestVacuumSliceMs: 0,
  stopped: true,
};

export abstract class EventBatchWriter implements EventLogBackend {
  readonly #files: DailyJsonlWriter | undefined;
  /** Batches are written strictly in order, one after the other. */
  #tail: Promise<void> = Promise.resolve();
  /** Set by stopRetention(): the running retention pass ends at its next slice. */
  #retentionStop = false;
  /** Set by close(): no retention pass runs on. */
  #closing = false;
  /** When the log said it is closing (closing()), epoch ms; undefined while it runs. */
  #closingSince: number | undefined;
  /** The running retention pass, awaited by close() so its answer goes out before the database closes. */
  #retention: Promise<unknown> = Promise.resolve();
  /** Chunks staged for the next write's batch, in order. */
  #staged: Readonly<RowColumns>[] = [];

  /** @param files where the daily files go; none are written when undefined */
  constructor(files: { logsDir: string; prefix: string } | undefined) {
    this.#files = files === undefined ? undefined : new DailyJsonlWriter(files.logsDir, files.prefix);
  }

  /** Writes a batch (its packed chunks, in order) to the database as one; a throw or rejection is the batch's failure. */
  protected abstract insert(chunks: readonly Readonly<RowColumns>[]): void | Promise<void>;
  /** Adds the rollup rows and queue samples to the database's. */
  protected abstract insertAggregates(a: Aggregates): void | Promise<void>;
  /** One retention pass, in slices; `stopping()` true ends it at its next slice. */
  protected abstract retainPass(req: RowRetentionRequest, stopping: () => boolean): Promise<RowRetentionStats>;
  /** Releases the database side once everything is written. */
  protected abstract closeDatabase(): void | Promise<void>;

  stage(chunk: Readonly<RowColumns>): void {
    this.#staged.push(chunk);
  }

  /** The database, then one append per day touched; batches never interleave. */
  write(batch: Readonly<RowColumns>): Promise<void> {
    // The chunks staged so far are this batch's, whenever it comes to be written.
    const chunks = this.#staged;
    this.#staged = [];
    chunks.push(batch);
    const next = this.#tail.then(() => this.#write(chunks));
    this.#tail = next.catch(() => undefined);
    return next;
  }

  /** After the batches handed over before them; the daily files keep events only. */
  writeAggregates(a: Aggregates): Promise<void> {
    const next = this.#tail.then(() => this.insertAggregates(a));
    this.#tail = next.catch(() => undefined);
    return next;
  }

  async #write(chunks: readonly Readonly<RowColumns>[]): Promise<void> {
    let dbError: unknown;
    try {
      await this.insert(chunks);
    } catch (err) {
      dbError = err;
    }
    // The file is written even when the database refused, so the rows survive somewhere.
    if (this.#files !== undefined) for (const chunk of chunks) await this.#files.write(chunk);
    if (dbError !== undefined) throw dbError;
  }

  /** Runs a retention pass after the one running, if any. */
  retain(req: RowRetentionRequest): Promise<RowRetentionStats> {
    // Cleared here, when the pass is asked for, so a stop asked right after it is not lost.
    this.#retentionStop = false;
    const pass = this.#retention.then(() =>
      this.#closing ? { ...CLOSED_PASS } : this.retainPass(req, () => this.#retentionStop || this.#closing),
    );
    this.#retention = pass.catch(() => undefined);
    return pass;
  }

  /** Ends a running retention pass at its next slice. */
  stopRetention(): void {
    this.#retentionStop = true;
  }

  closing(): void {
    this.#closingSince ??= Date.now();
  }

  /** Since when the log is closing (epoch ms), undefined while it runs. */
  protected get closingSince(): number | undefined {
    return this.#closingSince;
  }

  /** Waits for the running retention pass and the batches handed over, then ends the files and the database side. */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#retention;
    await this.#tail;
    try {
      await this.#files?.close();
    } finally {
      await this.closeDatabase();
    }
  }
}

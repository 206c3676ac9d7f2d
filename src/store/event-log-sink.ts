/**
 * Where event rows end up: the log database and the daily JSON Lines files, written together.
 * Retention's deletes and vacuum run here too, on the writer's own connection and thread, in
 * slices with the batches in between: the writer never waits on a lock for them, and the event
 * loop of svc serve never runs them.
 */
import { slicePacer } from '../common/slice-pacer.js';
import { EventLogRepo } from './event-log-repo.js';
import { DailyJsonlWriter } from './event-log-files.js';
import type { RowColumns } from './event-log-row.js';

export interface WorkerSetup {
  logDb: string;
  logsDir: string;
  prefix: string;
}

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
  /** Writes a packed batch; batches are written in the order they were given. */
  write(batch: RowColumns): Promise<void>;
  retain(request: RowRetentionRequest): Promise<RowRetentionStats>;
  /** Ends a running retention pass at its next slice. */
  stopRetention(): void;
  close(): Promise<void>;
}

/**
 * A write carries a packed batch (see `packEventRow`). `retain` runs a retention pass (answered
 * with its stats); `stop-retention` ends a running pass at its next slice (not answered).
 */
export type WorkerRequest =
  | { type: 'write'; id: number; batch: RowColumns }
  | { type: 'retain'; id: number; request: RowRetentionRequest }
  | { type: 'stop-retention'; id: number }
  | { type: 'close'; id: number };
export interface WorkerReply {
  id: number;
  error: string | undefined;
  /** The stats of a `retain`. */
  retention?: RowRetentionStats;
}

export class EventLogSink {
  readonly #repo: EventLogRepo;
  readonly #files: DailyJsonlWriter;
  /** Batches are written strictly in order, one after the other. */
  #tail: Promise<void> = Promise.resolve();
  /** Set by stopRetention(): the running retention pass ends at its next slice. */
  #retentionStop = false;
  /** Set by close(): no retention pass runs on. */
  #closing = false;
  /** The running retention pass, awaited by close() so its answer goes out before the database closes. */
  #retention: Promise<unknown> = Promise.resolve();

  constructor(setup: WorkerSetup) {
    this.#repo = EventLogRepo.open(setup.logDb);
    this.#files = new DailyJsonlWriter(setup.logsDir, setup.prefix);
  }

  /** One transaction for the packed batch, then one append per day touched; batches never interleave. */
  write(batch: Readonly<RowColumns>): Promise<void> {
    const next = this.#tail.then(() => this.#write(batch));
    this.#tail = next.catch(() => undefined);
    return next;
  }

  async #write(batch: Readonly<RowColumns>): Promise<void> {
    let dbError: unknown;
    try {
      this.#repo.insertColumns(batch);
    } catch (err) {
      dbError = err;
    }
    // The file is written even when the database refused, so the rows survive somewhere.
    await this.#files.write(batch);
    if (dbError !== undefined) throw dbError;
  }

  /**
   * Deletes the rows older than the cutoff, then gives the freed pages back, in slices. Between
   * two slices the thread's event loop turns, so a batch that arrived meanwhile is written first:
   * a batch waits at most one slice.
   */
  retain(req: RowRetentionRequest): Promise<RowRetentionStats> {
    // Cleared here, when the pass is asked for, so a stop asked right after it is not lost.
    this.#retentionStop = false;
    const pass = this.#retention.then(() => this.#retain(req));
    this.#retention = pass.catch(() => undefined);
    return pass;
  }

  async #retain(req: RowRetentionRequest): Promise<RowRetentionStats> {
    if (this.#closing) return { rowsDeleted: 0, pagesFreed: 0, longestDeleteSliceMs: 0, longestVacuumSliceMs: 0, stopped: true };
    const stopping = () => this.#retentionStop || this.#closing;
    const deletes = slicePacer(stopping);
    const rowsDeleted = await this.#repo.deleteOlderThanInSlices(req.cutoffIso, req.sliceRows, () => deletes.between());
    // Also after a pass that deleted nothing: pages a stopped pass freed are given back by the next.
    const vacuum = stopping() ? undefined : await this.#repo.reclaimFreePages({ between: slicePacer(stopping).between, pagesPerSlice: req.vacuumPagesPerSlice });
    return {
      rowsDeleted,
      pagesFreed: vacuum?.pagesFreed ?? 0,
      longestDeleteSliceMs: deletes.longestSliceMs,
      longestVacuumSliceMs: vacuum?.longestSliceMs ?? 0,
      stopped: stopping() || vacuum?.stopped === true,
    };
  }

  /** Ends a running retention pass at its next slice. */
  stopRetention(): void {
    this.#retentionStop = true;
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#retention;
    await this.#tail;
    try {
      await this.#files.close();
    } finally {
      this.#repo.close();
    }
  }
}

/**
 * Where event rows end up: the log database and the daily JSON Lines files, written together.
 * Retention's deletes and vacuum run here too, on the writer's own connection and thread, in
 * slices with the batches in between: the writer never waits on a lock for them, and the event
 * loop of svc serve never runs them.
 */
import { slicePacer } from '../../common/slice-pacer.js';
import { SqliteEventLogStore } from '../sqlite/sqlite-event-log-store.js';
import { EventBatchWriter, type RowRetentionRequest, type RowRetentionStats } from './batch-writer.js';
import type { RowColumns } from './event-log-row.js';
import type { Aggregates } from '../contracts/rollups.js';

export type { EventLogBackend, RowRetentionRequest, RowRetentionStats } from './batch-writer.js';

export interface WorkerSetup {
  logDb: string;
  logsDir: string;
  prefix: string;
}

/**
 * A write carries a packed batch (see `packEventRow`), after the chunks staged before it (not answered). `retain` runs a retention pass (answered
 * with its stats); `stop-retention` ends a running pass at its next slice (not answered).
 */
export type WorkerRequest =
  | { type: 'stage'; id: number; chunk: RowColumns }
  | { type: 'write'; id: number; batch: RowColumns }
  | { type: 'aggregates'; id: number; aggregates: Aggregates }
  | { type: 'retain'; id: number; request: RowRetentionRequest }
  | { type: 'stop-retention'; id: number }
  | { type: 'close'; id: number };
export interface WorkerReply {
  id: number;
  error: string | undefined;
  /** The stats of a `retain`. */
  retention?: RowRetentionStats;
}

export class EventLogSink extends EventBatchWriter {
  readonly #repo: SqliteEventLogStore;

  constructor(setup: WorkerSetup) {
    super({ logsDir: setup.logsDir, prefix: setup.prefix });
    this.#repo = SqliteEventLogStore.open(setup.logDb);
  }

  /** One transaction for the batch's chunks. */
  protected insert(chunks: readonly Readonly<RowColumns>[]): void {
    this.#repo.insertChunks(chunks);
  }

  protected insertAggregates(a: Aggregates): void {
    this.#repo.addAggregates(a);
  }

  /**
   * Deletes the rows older than the cutoff, then gives the freed pages back, in slices. Between
   * two slices the thread's event loop turns, so a batch that arrived meanwhile is written first:
   * a batch waits at most one slice.
   */
  protected async retainPass(req: RowRetentionRequest, stopping: () => boolean): Promise<RowRetentionStats> {
    const deletes = slicePacer(stopping);
    const rowsDeleted = await this.#repo.deleteOlderThanInSlices(req.cutoffIso, req.sliceRows, () => deletes.between());
    // The rollups of the minutes before the cutoff go with the rows (one short statement: a few rows a minute).
    this.#repo.deleteRollupsBefore(Math.floor(Date.parse(req.cutoffIso) / 60_000));
    // Also after a pass that deleted nothing: pages a stopped pass freed are given back by the next.
    const vacuum = stopping()
      ? undefined
      : await this.#repo.reclaimFreePages({
          between: slicePacer(stopping).between,
          pagesPerSlice: req.vacuumPagesPerSlice,
        });
    return {
      rowsDeleted,
      pagesFreed: vacuum?.pagesFreed ?? 0,
      longestDeleteSliceMs: deletes.longestSliceMs,
      longestVacuumSliceMs: vacuum?.longestSliceMs ?? 0,
      stopped: stopping() || vacuum?.stopped === true,
    };
  }

  protected closeDatabase(): void {
    this.#repo.close();
  }
}

/**
 * The event log's writer on PostgreSQL (EventLog's backend when it is given `pg`): each batch in
 * one multi-row INSERT on the calling thread (the client is asynchronous, so the request path never
 * waits for it and no worker thread is needed), plus this node's daily JSON Lines files when it
 * keeps them. Retention drops whole day partitions and deletes the rest of the cut in slices.
 */
import { slicePacer } from '../../common/slice-pacer.js';
import { ROW_WIDTH, type RowColumns } from './event-log-row.js';
import { EventBatchWriter, type RowRetentionRequest, type RowRetentionStats } from './batch-writer.js';
import { StorageUnavailableError } from '../../common/errors.js';
import {
  QUEUE_SAMPLE_COLUMNS,
  QUEUE_SAMPLE_UPSERT_TAIL,
  queueSampleValues,
  ROLLUP_ADDED_COLUMNS,
  ROLLUP_INSERT_COLUMNS,
  rollupValues,
  blockAdds,
  blockAddValues,
  blockTrimUpdate,
  rollupBlock,
  ROLLUP_BLOCK_COLUMNS,
  ROLLUP_BLOCK_UPSERT_TAIL,
  type Aggregates,
  type RollupRow,
} from '../contracts/rollups.js';
import type { PgDb } from '../pg/pg-db.js';
import {
  createDayPartitions,
  daysAhead,
  dropDayPartition,
  listDayPartitions,
  partitionDay,
} from '../pg/pg-event-partitions.js';

export interface PgEventWriterOptions {
  /** Directory of this node's daily files; none are written when absent. */
  readonly logsDir?: string;
  /** Daily file name prefix. */
  readonly prefix: string;
  /** The clock that decides which day partitions to create ahead. @default Date.now */
  readonly now?: () => number;
}

/** The two-key advisory lock every batch's INSERT holds until its COMMIT: a fixed class, the schema hashed. */
const INSERT_LOCK_CLASS = 0x5356_4556; // 'SVEV'

/**
 * One statement per batch: the columns go in as 14 arrays, unnested into rows in batch order. The
 * advisory lock is taken before the first id is drawn and released after the COMMIT is visible, so
 * across every node ids become visible in increasing order: a follower reading after the last id
 * it saw (afterId) never misses a row that commits later with a smaller id. Batches of all nodes
 * are serialised for the length of one INSERT (no network round trip inside the lock).
 */
const INSERT_SQL = `WITH serialised AS MATERIALIZED (SELECT pg_advisory_xact_lock(${INSERT_LOCK_CLASS}, hashtext(current_schema())))
INSERT INTO events (ts, correlation_id, tenant, flow, step, event, payload, payload_truncated, http_status, outcome, reason, trace_id, duration_ms, failed_step)
SELECT r.* FROM serialised, unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[], $9::integer[], $10::text[], $11::text[], $12::text[], $13::double precision[], $14::text[]) AS r`;

/**
 * One retention slice: at most $3 of the oldest rows older than $1 past id $2, by the (id, ts) key.
 * `ts < $1` on the outer DELETE too, so only the partitions that can hold such rows are visited.
 */
const DELETE_SLICE_SQL = `WITH gone AS (
  DELETE FROM events WHERE ts < $1 AND id IN (SELECT id FROM events WHERE ts < $1 AND id > $2 ORDER BY id LIMIT $3) RETURNING id
) SELECT count(*) AS n, max(id) AS last FROM gone`;

/** Column of the packed row that is a 0/1 flag (payload_truncated) and goes in as a boolean. */
const TRUNCATED_COLUMN = 7;

/** A batch the database could not take for want of a connection is tried again this often, ms. */
export const OUTAGE_RETRY_MS = 1000;
/** Once the log is closing, how long a batch held through an outage is still tried, ms. */
export const CLOSING_GRACE_MS = 5000;

/** After a partition could not be created (the table stayed busy), how long the writer waits before trying again, ms. */
const PARTITION_RETRY_MS = 60_000;

/** Rollup rows per INSERT: 23 parameters each, far below PostgreSQL's 65,535. */
const ROLLUP_CHUNK = 500;

const byRollupKey = (a: RollupRow, b: RollupRow): number =>
  a.tenant.localeCompare(b.tenant, 'en') ||
  a.flow.localeCompare(b.flow, 'en') ||
  a.minute - b.minute ||
  a.door.localeCompare(b.door, 'en') ||
  a.step.localeCompare(b.step, 'en');

export class PgEventWriter extends EventBatchWriter {
  readonly #db: PgDb;
  readonly #now: () => number;
  /** Days whose partition this writer made or found; a missing one is created before its rows go in. */
  readonly #known = new Set<string>();
  /** No partition is attempted before this instant (ms) after one failed. */
  #partitionRetryAt = 0;

  constructor(db: PgDb, opts: PgEventWriterOptions) {
    super(opts.logsDir === undefined ? undefined : { logsDir: opts.logsDir, prefix: opts.prefix });
    this.#db = db;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * One INSERT for the batch (all its chunks), its day partitions made first. While the database cannot be
   * reached (StorageUnavailableError: a lost connection, a restart) the batch is kept and tried
   * again every OUTAGE_RETRY_MS, and the batches after it wait behind it in order (EventLog bounds
   * how many rows are held); once the log is closing, for CLOSING_GRACE_MS more. Any other error
   * fails the batch at once. An INSERT whose COMMIT went through just as the connection broke is
   * written twice: the event log is at least once through an outage.
   */
  protected async insert(chunks: readonly Readonly<RowColumns>[]): Promise<void> {
    // One statement for the batch: its column arrays are built over the chunks joined.
    const batch = chunks.length === 1 ? chunks[0]! : chunks.flat();
    await this.#whileReachable(async () => {
      await this.#ensurePartitions(batch);
      if (batch.length >= ROW_WIDTH) await this.#db.query(INSERT_SQL, columnArrays(batch));
    });
  }

  /**
   * Creates the partitions of today, tomorrow and every day of the batch that this writer has not
   * seen yet. When that fails for any reason but a lost connection, the rows still go in (to
   * events_default, moved to their day when its partition is made) and creation waits a while.
   */
  async #ensurePartitions(batch: Readonly<RowColumns>): Promise<void> {
    const missing = new Set<string>();
    for (const day of daysAhead(this.#now())) if (!this.#known.has(day)) missing.add(day);
    let previous = '';
    for (let i = 0; i + ROW_WIDTH <= batch.length; i += ROW_WIDTH) {
      const ts = batch[i] as string;
      if (previous !== '' && ts.startsWith(previous)) continue; // rows of one batch mostly share a day
      const day = partitionDay(ts);
      previous = day ?? '';
      if (day !== undefined && !this.#known.has(day)) missing.add(day);
    }
    if (missing.size === 0 || this.#now() < this.#partitionRetryAt) return;
    try {
      await createDayPartitions(this.#db, [...missing].sort());
      for (const day of missing) this.#known.add(day);
    } catch (err) {
      // PgDb reports a lost server as StorageUnavailableError: then the next batch tries again at once.
      if (!(err instanceof StorageUnavailableError)) this.#partitionRetryAt = this.#now() + PARTITION_RETRY_MS;
    }
  }

  /**
   * Drops the day partitions wholly before the cutoff's day, then deletes the older rows of the
   * rest (the cutoff's own day, and events_default) in slices of `sliceRows`, the pacer's turn
   * between two: no statement deletes more than a slice, and inserts never wait for a delete
   * (MVCC). `pagesFreed` is 0: a dropped partition gives its files back at once, autovacuum the rest.
   */
  protected async retainPass(req: RowRetentionRequest, stopping: () => boolean): Promise<RowRetentionStats> {
    const pacer = slicePacer(stopping);
    let rowsDeleted = 0;
    let partitionsDropped = 0;
    let going = true;
    const cutoffDay = req.cutoffIso.slice(0, 10);
    // Every row of a day before the cutoff's day is older than the cutoff.
    for (const { day } of await listDayPartitions(this.#db)) {
      if (!going || day >= cutoffDay) break;
      const rows = await dropDayPartition(this.#db, day);
      this.#known.delete(day);
      if (rows !== undefined) {
        rowsDeleted += rows;
        partitionsDropped += 1;
      }
      going = await pacer.between();
    }
    // A partition left by a busy table is emptied here instead, slice by slice, and dropped next pass.
    for (let after = 0; going;) {
      const slice = (
        await this.#db.query<{ n: number; last: number | null }>(DELETE_SLICE_SQL, [
          req.cutoffIso,
          after,
          req.sliceRows,
        ])
      ).rows[0]!;
      rowsDeleted += slice.n;
      if (slice.n < req.sliceRows || slice.last === null) break;
      after = slice.last;
      going = await pacer.between();
    }
    // The rollups of the minutes before the cutoff go with the rows (a few rows a minute: one
    // statement), with the blocks wholly before it; the minutes deleted inside the cutoff's block
    // are taken off that block first, in the same transaction.
    if (going) {
      const minute = Math.floor(Date.parse(req.cutoffIso) / 60_000);
      await this.#db.transaction(async (tx) => {
        const trim = blockTrimUpdate(minute, (n) => `$${n}`);
        if (trim !== undefined) await tx.query(trim.sql, trim.args);
        await tx.query('DELETE FROM rollup_blocks WHERE block < $1', [rollupBlock(minute)]);
        await tx.query('DELETE FROM rollups WHERE minute < $1', [minute]);
      });
      await this.#db.query('DELETE FROM queue_samples WHERE minute < $1', [minute]);
    }
    return {
      rowsDeleted,
      partitionsDropped,
      pagesFreed: 0,
      longestDeleteSliceMs: pacer.longestSliceMs,
      longestVacuumSliceMs: 0,
      stopped: stopping(),
    };
  }

  /**
   * Adds the rollup rows in statements of ROLLUP_CHUNK rows. Rows are sorted by key first, so two
   * nodes adding to the same keys take their row locks in the same order (no deadlock). Each
   * statement also adds its rows' flows' delivery counts to their 10-minute blocks (rollup_blocks,
   * migration 0010; summed per block, sorted by tenant, flow and block): one statement, so the
   * blocks commit with the minutes they come from or not at all. Through an outage the rows are
   * retried like a batch.
   */
  protected async insertAggregates(a: Aggregates): Promise<void> {
    const sorted = [...(a.rollups ?? [])].sort(byRollupKey);
    for (let i = 0; i < sorted.length; i += ROLLUP_CHUNK) {
      const chunk = sorted.slice(i, i + ROLLUP_CHUNK);
      const width = ROLLUP_INSERT_COLUMNS.length;
      const values = chunk.map(
        (_, r) => `(${ROLLUP_INSERT_COLUMNS.map((__, c) => `$${r * width + c + 1}`).join(', ')})`,
      );
      const upsert =
        `INSERT INTO rollups (${ROLLUP_INSERT_COLUMNS.join(', ')}) VALUES ${values.join(', ')} ` +
        `ON CONFLICT (tenant, flow, minute, door, step) DO UPDATE SET ${ROLLUP_ADDED_COLUMNS.map((c) => `${c} = rollups.${c} + excluded.${c}`).join(', ')}`;
      const blocks = blockAdds(chunk);
      const args = chunk.flatMap(rollupValues);
      let sql = upsert;
      if (blocks.length > 0) {
        const at = args.length;
        const bw = ROLLUP_BLOCK_COLUMNS.length;
        const blockValues = blocks.map(
          (_, r) => `(${ROLLUP_BLOCK_COLUMNS.map((__, c) => `$${at + r * bw + c + 1}`).join(', ')})`,
        );
        args.push(...blocks.flatMap(blockAddValues));
        sql =
          `WITH minutes AS (${upsert} RETURNING 1) ` +
          `INSERT INTO rollup_blocks (${ROLLUP_BLOCK_COLUMNS.join(', ')}) VALUES ${blockValues.join(', ')} ${ROLLUP_BLOCK_UPSERT_TAIL}`;
      }
      await this.#whileReachable(() => this.#db.query(sql, args));
    }
    // Queue samples: a few per minute; sorted like the rollups, for the same reason.
    const samples = [...(a.queueSamples ?? [])].sort(
      (x, y) => x.tenant.localeCompare(y.tenant, 'en') || x.flow.localeCompare(y.flow, 'en') || x.minute - y.minute,
    );
    for (let i = 0; i < samples.length; i += ROLLUP_CHUNK) {
      const chunk = samples.slice(i, i + ROLLUP_CHUNK);
      const width = QUEUE_SAMPLE_COLUMNS.length;
      const values = chunk.map(
        (_, r) => `(${QUEUE_SAMPLE_COLUMNS.map((__, c) => `$${r * width + c + 1}`).join(', ')})`,
      );
      const sql = `INSERT INTO queue_samples (${QUEUE_SAMPLE_COLUMNS.join(', ')}) VALUES ${values.join(', ')} ${QUEUE_SAMPLE_UPSERT_TAIL}`;
      await this.#whileReachable(() => this.#db.query(sql, chunk.flatMap(queueSampleValues)));
    }
  }

  /** Runs `op`, again every OUTAGE_RETRY_MS while the database cannot be reached (a closing log waits CLOSING_GRACE_MS at most). */
  async #whileReachable(op: () => Promise<unknown>): Promise<void> {
    for (;;) {
      try {
        await op();
        return;
      } catch (err) {
        const since = this.closingSince;
        if (
          !(err instanceof StorageUnavailableError) ||
          (since !== undefined && Date.now() - since >= CLOSING_GRACE_MS)
        )
          throw err;
        // Not unref'd: a process closing its log during an outage waits out the grace instead of ending with rows untold.
        await new Promise((r) => setTimeout(r, OUTAGE_RETRY_MS));
      }
    }
  }

  /** The pool is the store's: it stays open. */
  protected closeDatabase(): void {}
}

/**
 * The 14 column arrays of a packed batch, in INSERT_SQL's order. A NUL character, which SQLite
 * keeps but a PostgreSQL text value cannot hold, becomes U+FFFD rather than refusing the batch.
 */
function columnArrays(flat: Readonly<RowColumns>): unknown[][] {
  const columns: unknown[][] = Array.from({ length: ROW_WIDTH }, () => []);
  for (let i = 0; i + ROW_WIDTH <= flat.length; i += ROW_WIDTH) {
    for (let c = 0; c < ROW_WIDTH; c += 1) {
      const v = flat[i + c] ?? null;
      columns[c]!.push(
        c === TRUNCATED_COLUMN ? v === 1 : typeof v === 'string' && v.includes('\0') ? v.replaceAll('\0', '\uFFFD') : v,
      );
    }
  }
  return columns;
}

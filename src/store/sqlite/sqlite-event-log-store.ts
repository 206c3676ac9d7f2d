/** The log database's event table: batch inserts with their per-minute counts, a simple reader, retention deletes. */
import { reclaimFreePagesInSlices, type ReclaimOptions, type ReclaimResult } from './auto-vacuum.js';
import { openDb, type Db } from './db.js';
import type { Statement } from 'better-sqlite3';
import { logMigrations } from './migrations/log.js';
import { bloomAdd, bloomBytes, bloomHas, bloomKey } from './correlation-bloom.js';
import { EventInserts } from './event-inserts.js';
import { packRow, ROW_WIDTH, type EventRow, type RowColumns } from '../contracts/index.js';
import {
  type EventQuery,
  type TraceQuery,
  type StoredEvent,
  type EventCounts,
  type EventLogStore,
  TRACE_KINDS_SQL,
  toStoredEvent,
  toEventCounts,
  exactMatches,
  kindList,
  LATENCY_BUCKETS,
  ROLLUP_ADDED_COLUMNS,
  ROLLUP_INSERT_COLUMNS,
  rollupFromRecord,
  rollupCountFromRecord,
  ROLLUP_COUNT_COLUMNS,
  rollupSelect,
  rollupValues,
  type RollupCount,
  type RollupPoint,
  type RollupQuery,
  statusRange,
  QUEUE_SAMPLE_COLUMNS,
  QUEUE_SAMPLE_UPSERT_TAIL,
  queueSampleFromRecord,
  queueSampleSelect,
  queueSampleValues,
  type Aggregates,
  type QueueSample,
  type QueueSampleQuery,
  blockAdds,
  blockAddValues,
  blockTrimUpdate,
  flowTotalFromRecord,
  flowTotalsSelect,
  rollupBlock,
  ROLLUP_BLOCK_COLUMNS,
  ROLLUP_BLOCK_UPSERT_TAIL,
  type EdgeRead,
  type FlowTotal,
} from '../contracts/index.js';

/** A queue's sample of a minute (a later one of the same minute replaces it). */
const QUEUE_SAMPLE_UPSERT = `INSERT INTO queue_samples (${QUEUE_SAMPLE_COLUMNS.join(', ')}) VALUES (${QUEUE_SAMPLE_COLUMNS.map(() => '?').join(', ')}) ${QUEUE_SAMPLE_UPSERT_TAIL}`;

/** Adds a row to the one of its key (every counted column summed). */
const ROLLUP_UPSERT =
  `INSERT INTO rollups (${ROLLUP_INSERT_COLUMNS.join(', ')}) VALUES (${ROLLUP_INSERT_COLUMNS.map(() => '?').join(', ')}) ` +
  `ON CONFLICT (tenant, flow, minute, door, step) DO UPDATE SET ${ROLLUP_ADDED_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`;

/** Adds a flow's delivery rows of a block to the block's row (rollup_blocks, log migration 10). */
const BLOCK_UPSERT = `INSERT INTO rollup_blocks (${ROLLUP_BLOCK_COLUMNS.join(', ')}) VALUES (${ROLLUP_BLOCK_COLUMNS.map(() => '?').join(', ')}) ${ROLLUP_BLOCK_UPSERT_TAIL}`;

/** Adds a batch's rows of one minute and kind to its counts (event_counts, log migration 8). */
const COUNT_ADD =
  'INSERT INTO event_counts (minute, event, n, failed) VALUES (?, ?, ?, ?) ' +
  'ON CONFLICT (minute, event) DO UPDATE SET n = n + excluded.n, failed = failed + excluded.failed';
/** A row's minute in event_counts: its ts's first 16 characters, 'YYYY-MM-DDTHH:MM'. */
const MINUTE_CHARS = 16;
const MINUTE_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;
/** The counted columns of a range of rows, by kind (countsSince's answer before event_counts, and its edge now). */
const ROW_COUNTS =
  "SELECT event, count(*) AS n, sum(CASE WHEN event = 'completed' AND http_status >= 400 THEN 1 ELSE 0 END) AS failed FROM events WHERE id >= ? AND id < ? GROUP BY event";

/** A minute's counts, one entry per kind: a few kinds a minute, found by a scan rather than by hashing each row's kind. */
type KindCounts = { readonly event: string; n: number; failed: number }[];

/**
 * Rows counted by minute and kind, as event_counts keeps them: the minute is ts's first 16
 * characters, `failed` the `completed` rows of status 400 or more (as SQL's `http_status >= 400`:
 * NULL never is). Rows come in time order, so a row's minute is most often the row before's: it is
 * compared in place (no slice made per row). A minute's kinds are a few, found by a scan (no hash
 * of each row's fresh kind string).
 */
class MinuteTally {
  readonly minutes = new Map<string, KindCounts>();
  #minute = '';
  #kinds: KindCounts | undefined;

  add(ts: unknown, event: unknown, status: unknown): void {
    const text = String(ts);
    if (this.#kinds === undefined || this.#minute.length !== MINUTE_CHARS || !text.startsWith(this.#minute)) {
      this.#minute = text.slice(0, MINUTE_CHARS);
      this.#kinds = this.minutes.get(this.#minute);
      if (this.#kinds === undefined) this.minutes.set(this.#minute, (this.#kinds = []));
    }
    const kind = String(event);
    const failed = kind === 'completed' && typeof status === 'number' && status >= 400 ? 1 : 0;
    const kinds = this.#kinds;
    for (let i = 0; i < kinds.length; i++) {
      const c = kinds[i]!;
      if (c.event === kind) {
        c.n += 1;
        c.failed += failed;
        return;
      }
    }
    kinds.push({ event: kind, n: 1, failed });
  }
}

const INSERT_HEAD =
  'INSERT INTO events (ts, correlation_id, tenant, flow, step, event, payload, payload_truncated, http_status, outcome, reason, trace_id, duration_ms, failed_step) VALUES';

/**
 * Row ids per block of correlation_blooms (log migration 9) as the writer cuts them. Mutable for
 * tests, which prove the blocks' edges with a few rows: a store takes the value when it is made
 * (readers need none: each filter row carries its block's bounds). 8,192: a lookup scans at most
 * about two blocks beside the ones holding the id (the incomplete last block and a false positive
 * now and then), 10 KiB of filter per block (docs/events.md has the measurements).
 */
export const correlationBlocks = { ids: 8192 };

/** The largest id SQL is asked about: an open end of a range of ids. */
const NO_END = Number.MAX_SAFE_INTEGER;

/** The writer's filter of the incomplete last block: ids from `start` on, up to `next - 1` so far. */
interface TailBlock {
  start: number;
  next: number;
  readonly bits: Buffer;
}

export class SqliteEventLogStore implements EventLogStore {
  readonly #db: Db;
  readonly #insertChunks: (chunks: readonly Readonly<RowColumns>[]) => void;
  readonly #minId;
  readonly #maxId;
  readonly #tsAtOrAfter;
  readonly #deleteSlice: (from: number, to: number, iso: string) => number;
  readonly #rowCounts;
  readonly #minuteCounts;
  #rollupUpsert: Statement | undefined;
  #blockUpsert: Statement | undefined;
  #sampleUpsert: Statement | undefined;
  readonly #blockIds: number;
  readonly #putBloom;
  readonly #lastBloom;
  readonly #bloomsIn;
  readonly #blockCorrelations;
  readonly #dropBloomsBelow;
  /** Built on the first batch (or by prepareCorrelationFilters); undefined again after a failed batch. */
  #tail: TailBlock | undefined;

  constructor(db: Db, opts: { correlationBlockIds?: number } = {}) {
    this.#db = db;
    this.#blockIds = Math.max(1, Math.floor(opts.correlationBlockIds ?? correlationBlocks.ids));
    this.#putBloom = db.prepare<[number, number, Buffer]>(
      'INSERT OR REPLACE INTO correlation_blooms (first_id, last_id, bits) VALUES (?, ?, ?)',
    );
    this.#lastBloom = db.prepare<[], { id: number | null }>('SELECT max(last_id) AS id FROM correlation_blooms');
    this.#bloomsIn = db.prepare<[number, number], { first_id: number; last_id: number; bits: Buffer }>(
      'SELECT first_id, last_id, bits FROM correlation_blooms WHERE first_id < ? AND last_id >= ? ORDER BY first_id',
    );
    this.#blockCorrelations = db
      .prepare<[number, number], string>(
        'SELECT correlation_id FROM events WHERE id >= ? AND id < ? AND correlation_id IS NOT NULL',
      )
      .pluck(true);
    this.#dropBloomsBelow = db.prepare<[number]>('DELETE FROM correlation_blooms WHERE last_id < ?');
    this.#minId = db.prepare<[], { id: number | null }>('SELECT min(id) AS id FROM events');
    this.#maxId = db.prepare<[], { id: number | null }>('SELECT max(id) AS id FROM events');
    this.#tsAtOrAfter = db.prepare<[number], { ts: string }>('SELECT ts FROM events WHERE id >= ? ORDER BY id LIMIT 1');
    this.#rowCounts = db.prepare<[number, number], { event: string; n: number; failed: number }>(ROW_COUNTS);
    this.#minuteCounts = db.prepare<[string], { event: string; n: number; failed: number }>(
      'SELECT event, sum(n) AS n, sum(failed) AS failed FROM event_counts WHERE minute >= ? GROUP BY event',
    );
    const countAdd = db.prepare<[string, string, number, number]>(COUNT_ADD);
    const countSub = db.prepare<[number, number, string, string]>(
      'UPDATE event_counts SET n = n - ?, failed = failed - ? WHERE minute = ? AND event = ?',
    );
    const countDrop = db.prepare<[string, string]>(
      'DELETE FROM event_counts WHERE minute = ? AND event = ? AND n <= 0',
    );
    const deleteIdRange = db
      .prepare<[number, number, string]>(
        'DELETE FROM events WHERE id >= ? AND id < ? AND ts < ? RETURNING ts, event, http_status',
      )
      .raw(true);
    // Every row deleted is taken off its minute's count in the delete's own transaction (a minute
    // left with no row loses its count row): the counts stay the rows' whatever the rows' order.
    this.#deleteSlice = db.transaction((from: number, to: number, iso: string): number => {
      const gone = deleteIdRange.all(from, to, iso) as [unknown, unknown, unknown][];
      const tally = new MinuteTally();
      for (const r of gone) tally.add(r[0], r[1], r[2]);
      for (const [minute, kinds] of tally.minutes) {
        for (const c of kinds) {
          countSub.run(c.n, c.failed, minute, c.event);
          countDrop.run(minute, c.event);
        }
      }
      // Filters of blocks wholly below the lowest row left go with their rows (a partly deleted
      // block's stays: it only makes a lookup scan what is left of it).
      const first = this.#minId.get()?.id ?? null;
      if (first !== null) this.#dropBloomsBelow.run(first);
      return gone.length;
    });
    // Rows go in as multi-row INSERTs bound straight from the packed columns, null columns as
    // literals (event-inserts.ts): far fewer statement executions and binds than one per value.
    const inserts = new EventInserts(db, INSERT_HEAD);
    // The batch's counts by minute and kind go in the same transaction as its rows: a failed or
    // interrupted batch leaves neither. A batch is a few (minute, kind) upserts (one minute, a few kinds).
    // A batch may come in chunks (EventLog hands the rows of a large batch over as they fill):
    // each chunk's rows follow the one before's, all in the batch's one transaction.
    this.#insertChunks = db.transaction((chunks: readonly Readonly<RowColumns>[]) => {
      const tally = new MinuteTally();
      for (const flat of chunks) {
        const end = flat.length - (flat.length % ROW_WIDTH);
        if (end === 0) continue;
        const last = inserts.insert(flat, end);
        for (let r = 0; r < end; r += ROW_WIDTH) tally.add(flat[r], flat[r + 5], flat[r + 8]);
        this.#addCorrelations(flat, end, last);
      }
      for (const [minute, kinds] of tally.minutes) {
        for (const c of kinds) countAdd.run(minute, c.event, c.n, c.failed);
      }
    });
  }

  /**
   * Adds a batch's correlation ids to the filter of the incomplete last block, and writes the
   * filter of each block a row of the batch completes (in the batch's transaction). A batch's ids
   * are contiguous and end at `last` (one writer, AUTOINCREMENT). When they do not follow the ids
   * this writer saw last (its first batch, another writer's rows in between, a failed batch), the
   * filters are brought up from the rows instead, these included: never a block without a row's id.
   */
  #addCorrelations(flat: Readonly<RowColumns>, end: number, last: number): void {
    const first = last - end / ROW_WIDTH + 1;
    const t = this.#tail;
    if (t === undefined || first !== t.next) {
      this.#bringUpFilters();
      return;
    }
    let blockEnd = t.start + this.#blockIds - 1;
    // A row with the id of the row before it (a delivery's rows told one after the other) adds
    // nothing: skipped, once its block's filter has it.
    let prev: unknown = null;
    for (let r = 1, id = first; r < end; r += ROW_WIDTH, id++) {
      const c = flat[r];
      if (c !== prev && c !== null && c !== undefined) bloomAdd(t.bits, typeof c === 'string' ? c : String(c));
      prev = c;
      if (id === blockEnd) {
        this.#putBloom.run(t.start, blockEnd, t.bits);
        t.start = id + 1;
        blockEnd += this.#blockIds;
        t.bits.fill(0);
        prev = null;
      }
    }
    t.next = last + 1;
  }

  /**
   * Writes a filter for every complete block of rows that has none (after the last block that
   * has one, from the lowest row), and builds the incomplete last block's from its rows. Run on
   * open and whenever the writer's own count of ids is off (see #addCorrelations).
   */
  #bringUpFilters(): number {
    const bounds = this.#bounds();
    const covered = this.#lastBloom.get()?.id ?? 0;
    let start = Math.max(covered + 1, bounds?.first ?? 0);
    const end = bounds === undefined ? start : bounds.last + 1;
    let written = 0;
    for (; start + this.#blockIds <= end; start += this.#blockIds) {
      this.#putBloom.run(start, start + this.#blockIds - 1, this.#filterOf(start, start + this.#blockIds));
      written += 1;
    }
    // Ids are never given twice (AUTOINCREMENT): the next row's is past every filter's block.
    this.#tail = { start, next: Math.max(start, end), bits: this.#filterOf(start, end) };
    return written;
  }

  /** The filter of the rows of ids [from, to), from the rows. */
  #filterOf(from: number, to: number): Buffer {
    const bits = Buffer.alloc(bloomBytes(this.#blockIds));
    // all(), not iterate(): a third of the time (a block is at most #blockIds short strings).
    if (from < to) for (const c of this.#blockCorrelations.all(from, to)) bloomAdd(bits, String(c));
    return bits;
  }

  /**
   * Brings correlation_blooms up to the rows (the one-time backfill of a log written before
   * migration 9, or the blocks a crash left without a filter) and rebuilds the writer's filter of
   * the incomplete last block, in one transaction. The writer runs it on open; returns how many
   * filters it wrote.
   */
  prepareCorrelationFilters(): number {
    return this.#db.transaction(() => this.#bringUpFilters())();
  }

  /**
   * The ranges of ids [from, to) of [lo, hi) that may hold rows of `correlationId`, in id order:
   * all of it but the blocks whose filter says it holds none. Blocks without a filter (the
   * incomplete last one, any not yet built) are always in.
   */
  #candidateRanges(correlationId: string, lo: number, hi: number): [number, number][] {
    const key = bloomKey(correlationId);
    const ranges: [number, number][] = [];
    let from = lo;
    for (const b of this.#bloomsIn.all(hi, lo)) {
      if (bloomHas(b.bits, key)) continue;
      if (b.first_id > from) {
        const prev = ranges[ranges.length - 1];
        if (prev !== undefined && prev[1] === from) prev[1] = b.first_id;
        else ranges.push([from, b.first_id]);
      }
      from = Math.max(from, b.last_id + 1);
    }
    if (from < hi) {
      const prev = ranges[ranges.length - 1];
      if (prev !== undefined && prev[1] === from) prev[1] = hi;
      else ranges.push([from, hi]);
    }
    return ranges;
  }

  /**
   * `SELECT * FROM events WHERE <where> ORDER BY id <dir> LIMIT <limit>`. With a correlation id,
   * over the candidate ranges of ids of [lo, hi) only (see #candidateRanges), one statement a
   * range in the order asked, until the limit: the same rows as one statement over them all.
   */
  #selectRows(
    where: string[],
    args: unknown[],
    correlationId: unknown,
    lo: number,
    hi: number,
    desc: boolean,
    limit: number,
  ): StoredEvent[] {
    const order = `ORDER BY id ${desc ? 'DESC' : 'ASC'}`;
    if (typeof correlationId !== 'string' || !(lo < hi)) {
      return this.#select(`SELECT * FROM events WHERE ${where.join(' AND ')} ${order} LIMIT ${limit}`, args);
    }
    const ranges = this.#candidateRanges(correlationId, lo, hi);
    if (desc) ranges.reverse();
    const stmt = this.#db.prepare(
      `SELECT * FROM events WHERE ${where.join(' AND ')} AND id >= ? AND id < ? ${order} LIMIT ?`,
    );
    const out: StoredEvent[] = [];
    for (const [from, to] of ranges) {
      const rows = stmt.all(...args, from, to, limit - out.length) as (EventRow & { id: number })[];
      for (const r of rows) out.push(toStoredEvent(r));
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Opens (creating and migrating) the log database at `path`. */
  static open(path: string, opts: { correlationBlockIds?: number } = {}): SqliteEventLogStore {
    const store = new SqliteEventLogStore(openDb(path, logMigrations), opts);
    store.prepareCorrelationFilters();
    return store;
  }

  /**
   * For the connection that answers the UI's searches: memory-mapped reads (up to 1 GiB of the file,
   * file-backed and reclaimable) and a page cache of up to 256 MiB, so a scan of the table (a lookup
   * by correlation id has no index) reads pages without a copy per page. Measured on 1,000,000 rows:
   * 96-108 ms -> 74-83 ms. The writer thread's connection is not touched.
   */
  tuneForScans(): void {
    this.#db.pragma('mmap_size = 1073741824');
    this.#db.pragma('cache_size = -262144');
  }

  /** Inserts every row of a packed batch (see `packEventRow`) in one transaction. */
  insertColumns(flat: Readonly<RowColumns>): void {
    this.insertChunks([flat]);
  }

  /** Inserts every row of a batch packed in chunks, in their order, in one transaction. */
  insertChunks(chunks: readonly Readonly<RowColumns>[]): void {
    if (!chunks.some((flat) => flat.length >= ROW_WIDTH)) return;
    try {
      this.#insertChunks(chunks);
    } catch (err) {
      // Rolled back: the filter in memory may hold ids of rows that are not there, or have moved
      // past a block whose filter was not kept. The next batch builds it again from the rows.
      this.#tail = undefined;
      throw err;
    }
  }

  /** Inserts every row in one transaction. */
  insertMany(rows: readonly EventRow[]): void {
    this.insertColumns(rows.flatMap(packRow));
  }

  /** Newest first (or oldest first). Filters are exact matches. Trace rows are never returned here: only `queryTrace` reads them. */
  query(q: EventQuery = {}): StoredEvent[] {
    const where: string[] = [`event NOT IN (${TRACE_KINDS_SQL})`];
    const args: unknown[] = [];
    exactMatches(q, ['tenant', 'flow', 'event', 'correlation_id', 'http_status'], where, args);
    kindList(q, where, args);
    statusRange(q, where, args);
    // The range of ids the query bounds, [lo, hi): where a lookup by correlation id reads filters.
    let lo = 0;
    let hi = NO_END;
    if (q.beforeId !== undefined) {
      where.push('id < ?');
      args.push(q.beforeId);
      hi = Math.min(hi, Math.ceil(q.beforeId));
    }
    if (q.afterId !== undefined) {
      where.push('id > ?');
      args.push(q.afterId);
      lo = Math.max(lo, Math.floor(q.afterId) + 1);
    }
    if (q.since !== undefined) {
      const id = this.firstIdAtOrAfter(q.since);
      where.push('id >= ?');
      args.push(id);
      lo = Math.max(lo, id);
    }
    if (q.until !== undefined) {
      const id = this.firstIdAtOrAfter(`${q.until}\uffff`);
      where.push('id < ?');
      args.push(id);
      hi = Math.min(hi, id);
    }
    const limit = Math.max(1, Math.min(q.limit ?? 100, 10_000));
    return this.#selectRows(where, args, q.correlation_id, lo, hi, q.oldestFirst !== true, limit);
  }

  /**
   * Trace rows, oldest first. `readable` is decided by the caller's role and goes into the query
   * itself: when false the statement selects nothing, so no trace row is ever read for that caller.
   */
  queryTrace(q: TraceQuery, readable: boolean): StoredEvent[] {
    const where: string[] = [`event IN (${TRACE_KINDS_SQL})`, '?'];
    const args: unknown[] = [readable ? 1 : 0];
    exactMatches(q, ['tenant', 'flow', 'correlation_id'], where, args);
    let lo = 0;
    if (q.afterId !== undefined) {
      where.push('id > ?');
      args.push(q.afterId);
      lo = Math.max(lo, Math.floor(q.afterId) + 1);
    }
    if (q.since !== undefined) {
      // The id bound (a binary search, as query's) spares the scan of every older row; ts stays exact.
      const id = this.firstIdAtOrAfter(q.since);
      where.push('id >= ?', 'ts >= ?');
      args.push(id, q.since);
      lo = Math.max(lo, id);
    }
    if (q.until !== undefined) {
      where.push('ts <= ?');
      args.push(q.until);
    }
    const limit = Math.max(1, Math.min(q.limit ?? 1000, 10_000));
    // Not readable: the statement selects nothing, filters or not.
    return this.#selectRows(where, args, readable ? q.correlation_id : undefined, lo, NO_END, false, limit);
  }

  #select(sql: string, args: unknown[]): StoredEvent[] {
    const rows = this.#db.prepare(sql).all(...args) as (EventRow & { id: number })[];
    return rows.map(toStoredEvent);
  }

  /**
   * Deletes rows whose `ts` is before `iso` (ISO 8601 UTC); returns how many. Rows are appended in
   * time order, so the cut is found by a binary search over row ids (no `ts` index to maintain on
   * the hot insert path); rows before the cut that are not older are kept.
   */
  deleteOlderThan(iso: string): number {
    const range = this.#olderRange(iso);
    return range === undefined ? 0 : this.#deleteSlice(range.first, range.cut, iso);
  }

  /**
   * `deleteOlderThan` in slices of at most `sliceRows` row ids, one transaction each, awaiting
   * `between()` after each (it answers false to stop early, e.g. at shutdown): a cut of millions
   * of rows never holds the event loop, nor the log database's write lock (which the event writer
   * needs), for more than one slice. Returns how many rows were deleted.
   */
  async deleteOlderThanInSlices(iso: string, sliceRows: number, between: () => Promise<boolean>): Promise<number> {
    const range = this.#olderRange(iso);
    if (range === undefined) return 0;
    let deleted = 0;
    for (let from = range.first; from < range.cut; from += sliceRows) {
      deleted += this.#deleteSlice(from, Math.min(from + sliceRows, range.cut), iso);
      if (!(await between())) break;
    }
    return deleted;
  }

  /**
   * Gives the pages freed by deletes back to the file system in short slices (see auto-vacuum.ts):
   * each slice is one short write transaction, so the event writer thread waits at most one.
   */
  reclaimFreePages(opts: ReclaimOptions): Promise<ReclaimResult> {
    return reclaimFreePagesInSlices(this.#db, opts);
  }

  /**
   * How many rows of each kind were written at or after `iso`, and how many `completed` rows had a
   * status of 400 or more (the Overview's "last hour"). The whole minutes come from event_counts (60
   * rows a kind for an hour); the rows of `iso`'s own minute are counted from the rows, over a range
   * of ids (binary searches, rows being appended in time order): the part of the minute from `iso`
   * on, added to the minutes after it, or the part before `iso`, taken off the minutes from its
   * minute on, whichever has fewer rows (none when `iso` is on the minute). Same answer as a count
   * of the rows from `iso`'s first id on; `iso` not starting 'YYYY-MM-DDTHH:MM' is counted so.
   */
  countsSince(iso: string): EventCounts {
    const bounds = this.#bounds();
    if (bounds === undefined) return toEventCounts([]);
    const end = bounds.last + 1;
    const from = this.#search(iso, bounds.first, end);
    const minute = MINUTE_KEY.test(iso) ? iso.slice(0, MINUTE_CHARS) : '';
    const minuteMs = Date.parse(`${minute}:00.000Z`);
    const next = Number.isNaN(minuteMs) ? '' : new Date(minuteMs + 60_000).toISOString().slice(0, MINUTE_CHARS);
    if (!MINUTE_KEY.test(next) || new Date(minuteMs).toISOString().slice(0, MINUTE_CHARS) !== minute) {
      return toEventCounts(this.#rowCounts.all(from, end));
    }
    const minuteFrom = this.#search(minute, bounds.first, from);
    const nextFrom = this.#search(next, from, end);
    const counts = new Map<string, { n: number; failed: number }>();
    const add = (rows: readonly { event: string; n: number; failed: number }[], sign: 1 | -1) => {
      for (const r of rows) {
        const c = counts.get(r.event) ?? { n: 0, failed: 0 };
        c.n += sign * r.n;
        c.failed += sign * r.failed;
        counts.set(r.event, c);
      }
    };
    if (from - minuteFrom <= nextFrom - from) {
      add(this.#minuteCounts.all(minute), 1);
      if (minuteFrom < from) add(this.#rowCounts.all(minuteFrom, from), -1);
    } else {
      add(this.#minuteCounts.all(next), 1);
      add(this.#rowCounts.all(from, nextFrom), 1);
    }
    // A kind whose rows are all before `iso` is absent, as from the rows.
    return toEventCounts([...counts].filter(([, c]) => c.n > 0).map(([event, c]) => ({ event, ...c })));
  }

  /**
   * Adds each rollup row to its key's, each flow's delivery rows to their 10-minute block's row
   * (summed per block first: one upsert per flow and block), and puts each queue sample in its
   * minute (a later one of the same minute replaces it), in one transaction (the writer thread's,
   * beside the event batches).
   */
  addAggregates(a: Aggregates): void {
    const rows = a.rollups ?? [];
    const samples = a.queueSamples ?? [];
    if (rows.length + samples.length === 0) return;
    // Prepared once: the writer thread adds the rollups every few seconds for as long as it runs.
    const upsert = (this.#rollupUpsert ??= this.#db.prepare(ROLLUP_UPSERT));
    const sample = (this.#sampleUpsert ??= this.#db.prepare(QUEUE_SAMPLE_UPSERT));
    const block = (this.#blockUpsert ??= this.#db.prepare(BLOCK_UPSERT));
    this.#db.transaction(() => {
      for (const r of rows) {
        if (r.buckets.length !== LATENCY_BUCKETS) throw new Error(`a rollup row has ${r.buckets.length} buckets`);
        upsert.run(rollupValues(r));
      }
      for (const b of blockAdds(rows)) block.run(blockAddValues(b));
      for (const s of samples) sample.run(queueSampleValues(s));
    })();
  }

  queueSamples(q: QueueSampleQuery): QueueSample[] {
    const { sql, args } = queueSampleSelect(q, () => '?');
    return (this.#db.prepare(sql).all(...args) as Record<string, unknown>[]).map(queueSampleFromRecord);
  }

  rollups(q: RollupQuery): RollupPoint[] {
    const { sql, args } = rollupSelect(q, () => '?');
    return (this.#db.prepare(sql).all(...args) as Record<string, unknown>[]).map(rollupFromRecord);
  }

  rollupCounts(q: RollupQuery): RollupCount[] {
    const { sql, args } = rollupSelect(q, () => '?', ROLLUP_COUNT_COLUMNS);
    return (this.#db.prepare(sql).all(...args) as Record<string, unknown>[]).map(rollupCountFromRecord);
  }

  flowTotals(fromMinute: number, toMinute: number, edges?: { lead: EdgeRead; trail: EdgeRead }): FlowTotal[] {
    const { sql, args } = flowTotalsSelect(fromMinute, toMinute, () => '?', edges);
    return (this.#db.prepare(sql).all(...args) as Record<string, unknown>[]).map(flowTotalFromRecord);
  }

  /**
   * Deletes the rollups and queue samples of minutes before `minute` (retention, with the rows),
   * and the blocks wholly before it; the minutes deleted inside the block `minute` falls in are
   * taken off that block first, in the same transaction. Answers the minute rows and samples deleted.
   */
  deleteRollupsBefore(minute: number): number {
    return this.#db.transaction(() => {
      const trim = blockTrimUpdate(minute, () => '?');
      if (trim !== undefined) this.#db.prepare(trim.sql).run(...trim.args);
      this.#db.prepare('DELETE FROM rollup_blocks WHERE block < ?').run(rollupBlock(minute));
      const rollups = this.#db.prepare('DELETE FROM rollups WHERE minute < ?').run(minute).changes;
      return rollups + this.#db.prepare('DELETE FROM queue_samples WHERE minute < ?').run(minute).changes;
    })();
  }

  /** The id of the newest row (0 when the table is empty): where a reader that follows the log starts. */
  lastId(): number {
    return this.#maxId.get()?.id ?? 0;
  }

  /** The first row id whose `ts` is not before `iso` (one past the last id when none is). */
  firstIdAtOrAfter(iso: string): number {
    return this.#olderRange(iso)?.cut ?? 0;
  }

  /** The lowest row id and the first id whose row is not older than `iso`; undefined when the table is empty. */
  #olderRange(iso: string): { first: number; cut: number } | undefined {
    const bounds = this.#bounds();
    return bounds === undefined
      ? undefined
      : { first: bounds.first, cut: this.#search(iso, bounds.first, bounds.last + 1) };
  }

  /** The lowest and highest row ids; undefined when the table is empty. */
  #bounds(): { first: number; last: number } | undefined {
    // Two queries: SQLite answers a lone min() or max() of the rowid from the b-tree's edge, but
    // scans the whole table for both in one statement.
    const first = this.#minId.get()?.id ?? null;
    const last = this.#maxId.get()?.id ?? null;
    return first === null || last === null ? undefined : { first, last };
  }

  /** The first id in [lo, hi) whose row is not older than `iso` (hi when none is), by a binary search. */
  #search(iso: string, lo: number, hi: number): number {
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const row = this.#tsAtOrAfter.get(mid);
      if (row !== undefined && row.ts < iso) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  close(): void {
    this.#db.close();
  }
}

/** The log database's event table: batch inserts, a simple reader, retention deletes. */
import { openDb, type Db } from './db.js';
import { logMigrations } from './migrations/log.js';
import { packRow, ROW_WIDTH, type EventRow, type RowColumns } from './event-log-row.js';

export interface EventQuery {
  tenant?: string;
  flow?: string;
  event?: string;
  correlation_id?: string;
  /** Most rows returned, newest first. @default 100 */
  limit?: number;
}

/** A stored event as read back: payload parsed from its JSON text. */
export interface StoredEvent extends Omit<EventRow, 'payload' | 'payload_truncated'> {
  id: number;
  payload: unknown;
  payload_truncated: boolean;
}

const INSERT_HEAD = 'INSERT INTO events (ts, correlation_id, tenant, flow, step, event, payload, payload_truncated, http_status, outcome, reason) VALUES';
const VALUES_ONE = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
const CHUNK = 32;

export class EventLogRepo {
  readonly #db: Db;
  readonly #insertColumns: (flat: Readonly<RowColumns>) => void;

  constructor(db: Db) {
    this.#db = db;
    const one = db.prepare(`${INSERT_HEAD} ${VALUES_ONE}`);
    // Rows go in as multi-row INSERTs of CHUNK rows, bound straight from the packed columns (which
    // are in the statement's column order): far fewer statement executions than one per row, and
    // no object per row.
    const chunk = db.prepare(`${INSERT_HEAD} ${Array.from({ length: CHUNK }, () => VALUES_ONE).join(', ')}`);
    const chunkWidth = CHUNK * ROW_WIDTH;
    this.#insertColumns = db.transaction((flat: Readonly<RowColumns>) => {
      const end = flat.length - (flat.length % ROW_WIDTH);
      let i = 0;
      for (; i + chunkWidth <= end; i += chunkWidth) chunk.run(flat.slice(i, i + chunkWidth));
      for (; i < end; i += ROW_WIDTH) one.run(flat.slice(i, i + ROW_WIDTH));
    });
  }

  /** Opens (creating and migrating) the log database at `path`. */
  static open(path: string): EventLogRepo {
    return new EventLogRepo(openDb(path, logMigrations));
  }

  /** Inserts every row of a packed batch (see `packEventRow`) in one transaction. */
  insertColumns(flat: Readonly<RowColumns>): void {
    if (flat.length >= ROW_WIDTH) this.#insertColumns(flat);
  }

  /** Inserts every row in one transaction. */
  insertMany(rows: readonly EventRow[]): void {
    this.insertColumns(rows.flatMap(packRow));
  }

  /** Newest first. Filters are exact matches. */
  query(q: EventQuery = {}): StoredEvent[] {
    const where: string[] = [];
    const args: unknown[] = [];
    for (const key of ['tenant', 'flow', 'event', 'correlation_id'] as const) {
      const v = q[key];
      if (v !== undefined) {
        where.push(`${key} = ?`);
        args.push(v);
      }
    }
    const limit = Math.max(1, Math.min(q.limit ?? 100, 10_000));
    const sql = `SELECT * FROM events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ${limit}`;
    const rows = this.#db.prepare(sql).all(...args) as (EventRow & { id: number })[];
    return rows.map((r) => ({ ...r, payload: r.payload === null ? null : JSON.parse(r.payload), payload_truncated: r.payload_truncated === 1 }));
  }

  /**
   * Deletes rows whose `ts` is before `iso` (ISO 8601 UTC); returns how many. Rows are appended in
   * time order, so the cut is found by a binary search over row ids (no `ts` index to maintain on
   * the hot insert path); rows before the cut that are not older are kept.
   */
  deleteOlderThan(iso: string): number {
    // Two queries: SQLite answers a lone min() or max() of the rowid from the b-tree's edge, but
    // scans the whole table for both in one statement.
    const first = this.#db.prepare<[], { id: number | null }>('SELECT min(id) AS id FROM events').get()?.id ?? null;
    const last = this.#db.prepare<[], { id: number | null }>('SELECT max(id) AS id FROM events').get()?.id ?? null;
    if (first === null || last === null) return 0;
    const bounds = { lo: first, hi: last };
    const tsAtOrAfter = this.#db.prepare<[number], { ts: string }>('SELECT ts FROM events WHERE id >= ? ORDER BY id LIMIT 1');
    let lo = bounds.lo;
    let hi = bounds.hi + 1; // first id whose row is not older than iso
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const row = tsAtOrAfter.get(mid);
      if (row !== undefined && row.ts < iso) lo = mid + 1;
      else hi = mid;
    }
    return this.#db.prepare('DELETE FROM events WHERE id < ? AND ts < ?').run(lo, iso).changes;
  }

  close(): void {
    this.#db.close();
  }
}

/** The log database's event table: batch inserts, a simple reader, retention deletes. */
import { openDb, type Db } from './db.js';
import { logMigrations } from './migrations/log.js';
import type { EventRow } from './event-log-row.js';

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
const COLUMNS = 11;
const CHUNK = 32;

function fill(args: unknown[], at: number, r: EventRow): unknown[] {
  args[at] = r.ts;
  args[at + 1] = r.correlation_id;
  args[at + 2] = r.tenant;
  args[at + 3] = r.flow;
  args[at + 4] = r.step;
  args[at + 5] = r.event;
  args[at + 6] = r.payload;
  args[at + 7] = r.payload_truncated;
  args[at + 8] = r.http_status;
  args[at + 9] = r.outcome;
  args[at + 10] = r.reason;
  return args;
}

export class EventLogRepo {
  readonly #db: Db;
  readonly #insert;
  readonly #insertMany: (rows: readonly EventRow[]) => void;

  constructor(db: Db) {
    this.#db = db;
    this.#insert = db.prepare(`${INSERT_HEAD} ${VALUES_ONE}`);
    // Rows go in as multi-row INSERTs of CHUNK rows (positional binding): far fewer statement
    // executions per batch than one INSERT per row, which is most of the writer thread's cost.
    const chunk = db.prepare(`${INSERT_HEAD} ${Array.from({ length: CHUNK }, () => VALUES_ONE).join(', ')}`);
    const args: unknown[] = new Array(CHUNK * COLUMNS);
    this.#insertMany = db.transaction((rows: readonly EventRow[]) => {
      let i = 0;
      for (; i + CHUNK <= rows.length; i += CHUNK) {
        for (let j = 0; j < CHUNK; j++) fill(args, j * COLUMNS, rows[i + j]!);
        chunk.run(args);
      }
      for (; i < rows.length; i++) this.#insert.run(fill(new Array(COLUMNS), 0, rows[i]!));
    });
  }

  /** Opens (creating and migrating) the log database at `path`. */
  static open(path: string): EventLogRepo {
    return new EventLogRepo(openDb(path, logMigrations));
  }

  /** Inserts every row in one transaction. */
  insertMany(rows: readonly EventRow[]): void {
    if (rows.length > 0) this.#insertMany(rows);
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

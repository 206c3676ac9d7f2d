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

export class EventLogRepo {
  readonly #db: Db;
  readonly #insert;
  readonly #insertMany: (rows: readonly EventRow[]) => void;

  constructor(db: Db) {
    this.#db = db;
    this.#insert = db.prepare(
      `INSERT INTO events (ts, correlation_id, tenant, flow, step, event, payload, payload_truncated, http_status, outcome, reason)
       VALUES (@ts, @correlation_id, @tenant, @flow, @step, @event, @payload, @payload_truncated, @http_status, @outcome, @reason)`,
    );
    this.#insertMany = db.transaction((rows: readonly EventRow[]) => {
      for (const r of rows) this.#insert.run(r);
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

  /** Deletes rows whose `ts` is before `iso` (ISO 8601 UTC); returns how many. */
  deleteOlderThan(iso: string): number {
    return this.#db.prepare('DELETE FROM events WHERE ts < ?').run(iso).changes;
  }

  close(): void {
    this.#db.close();
  }
}

/** Payload-tracing flags per (tenant, flow) in the registry database; default off. */
import type { Db } from './db.js';
import type { TraceFlag, TraceStore } from '../contracts/index.js';

export class SqliteTraceStore implements TraceStore {
  readonly #db: Db;
  readonly #get;
  readonly #set;

  constructor(db: Db) {
    this.#db = db;
    this.#get = db.prepare<[string, string], { enabled: number }>(
      'SELECT enabled FROM trace_config WHERE tenant = ? AND flow = ?',
    );
    this.#set = db.prepare(
      `INSERT INTO trace_config (tenant, flow, enabled, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (tenant, flow) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at
       WHERE trace_config.enabled <> excluded.enabled`,
    );
  }

  /** Checked on every /run, /enqueue and dequeue: one indexed read. */
  isEnabled(tenant: string, flow: string): boolean {
    return this.#get.get(tenant, flow)?.enabled === 1;
  }

  /** Sets the flag; true only when it changed (a repeated toggle writes no audit row). */
  set(tenant: string, flow: string, enabled: boolean, at: string): boolean {
    return this.#set.run(tenant, flow, enabled ? 1 : 0, at).changes > 0;
  }

  /** Every stored flag (a flow never toggled has none: it is off), by tenant and flow; optionally one tenant's. */
  list(tenant?: string): TraceFlag[] {
    const rows = (
      tenant === undefined
        ? this.#db.prepare('SELECT tenant, flow, enabled, updated_at FROM trace_config ORDER BY tenant, flow').all()
        : this.#db
            .prepare('SELECT tenant, flow, enabled, updated_at FROM trace_config WHERE tenant = ? ORDER BY flow')
            .all(tenant)
    ) as { tenant: string; flow: string; enabled: number; updated_at: string }[];
    return rows.map((r) => ({ ...r, enabled: r.enabled === 1 }));
  }
}

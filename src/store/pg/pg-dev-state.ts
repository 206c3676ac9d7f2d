/**
 * The marker of a development store (`dev_state`, migration 0005): what lets `svc dev` publish
 * every save into a PostgreSQL store, as the `dev-state` file does for a state directory
 * (app/maintenance/dev-state.ts).
 */
import type { PgTx } from './pg-db.js';

export class PgDevState {
  readonly #db: PgTx;

  constructor(db: PgTx) {
    this.#db = db;
  }

  async isMarked(): Promise<boolean> {
    return (await this.#db.query('SELECT 1 FROM dev_state')).rows.length > 0;
  }

  /** True while the store holds nothing an installation is made of: no tenant, no flow, no UI account. */
  async isEmpty(): Promise<boolean> {
    const r = await this.#db.query<{ used: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM tenants) OR EXISTS (SELECT 1 FROM flow_versions) OR EXISTS (SELECT 1 FROM ui_users) AS used',
    );
    return r.rows[0]?.used === false;
  }

  /** Marks the store at `at` (ISO 8601); a second mark keeps the first. */
  async mark(at: string): Promise<void> {
    await this.#db.query('INSERT INTO dev_state (id, marked_at, note) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING', [
      at,
      'marked as a development store by svc dev: svc dev deploys every saved flow into it; delete this row to make svc dev refuse the store again',
    ]);
  }
}

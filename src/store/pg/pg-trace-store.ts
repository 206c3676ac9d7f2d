/** Payload-tracing flags per (tenant, flow) in the PostgreSQL store; default off. */
import type { PgTx } from './pg-db.js';
import type { TraceFlag, TraceStore } from '../contracts/index.js';

export class PgTraceStore implements TraceStore {
  constructor(private readonly db: PgTx) {}

  async isEnabled(tenant: string, flow: string): Promise<boolean> {
    return (
      (
        await this.db.query<{ enabled: boolean }>('SELECT enabled FROM trace_config WHERE tenant = $1 AND flow = $2', [
          tenant,
          flow,
        ])
      ).rows[0]?.enabled === true
    );
  }

  async set(tenant: string, flow: string, enabled: boolean, at: string): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO trace_config (tenant, flow, enabled, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant, flow) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at
       WHERE trace_config.enabled <> excluded.enabled`,
      [tenant, flow, enabled, at],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async list(tenant?: string): Promise<TraceFlag[]> {
    const r =
      tenant === undefined
        ? await this.db.query<TraceFlag>(
            'SELECT tenant, flow, enabled, updated_at FROM trace_config ORDER BY tenant COLLATE "C", flow COLLATE "C"',
          )
        : await this.db.query<TraceFlag>(
            'SELECT tenant, flow, enabled, updated_at FROM trace_config WHERE tenant = $1 ORDER BY flow COLLATE "C"',
            [tenant],
          );
    return r.rows;
  }
}

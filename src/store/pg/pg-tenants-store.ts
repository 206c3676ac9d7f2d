/** Tenants in the PostgreSQL store (the contract and the row shape: store/contracts/tenants.ts). */
import type { PgTx } from './pg-db.js';
import {
  toTenant,
  tenantExists,
  isUniqueViolation,
  type NewTenant,
  type Tenant,
  type TenantRow,
  type TenantStatus,
  type TenantsStore,
} from '../contracts/index.js';

const COLUMNS = 'id, display_name, status, auth_methods, created_at';

export class PgTenantsStore implements TenantsStore {
  constructor(private readonly db: PgTx) {}

  async get(id: string): Promise<Tenant | undefined> {
    const r = await this.db.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [id]);
    return r.rows[0] === undefined ? undefined : toTenant(r.rows[0]);
  }

  async list(): Promise<Tenant[]> {
    return (await this.db.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants ORDER BY id COLLATE "C"`)).rows.map(
      toTenant,
    );
  }

  async create(t: NewTenant): Promise<Tenant> {
    try {
      const r = await this.db.query<TenantRow>(
        `INSERT INTO tenants (${COLUMNS}) VALUES ($1, $2, 'active', $3, $4) RETURNING ${COLUMNS}`,
        [t.id, t.displayName, JSON.stringify(t.authMethods), t.createdAt],
      );
      return toTenant(r.rows[0]!);
    } catch (err) {
      if (isUniqueViolation(err)) throw tenantExists(t.id, err);
      throw err;
    }
  }

  async setStatus(id: string, status: TenantStatus): Promise<boolean> {
    return (
      ((await this.db.query('UPDATE tenants SET status = $1 WHERE id = $2 AND status <> $1', [status, id])).rowCount ??
        0) > 0
    );
  }
}

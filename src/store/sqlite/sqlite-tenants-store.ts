/** Tenants in the registry database: registration and the active/disabled flag (nothing is ever deleted). */
import type { Db } from './db.js';
import {
  type TenantStatus,
  type Tenant,
  type NewTenant,
  type TenantRow,
  toTenant,
  tenantExists,
  isUniqueViolation,
  type TenantsStore,
} from '../contracts/index.js';

export class SqliteTenantsStore implements TenantsStore {
  readonly #get;
  readonly #list;
  readonly #insert;
  readonly #setStatus;

  constructor(db: Db) {
    this.#get = db.prepare<[string], TenantRow>(
      'SELECT id, display_name, status, auth_methods, created_at FROM tenants WHERE id = ?',
    );
    this.#list = db.prepare<[], TenantRow>(
      'SELECT id, display_name, status, auth_methods, created_at FROM tenants ORDER BY id',
    );
    this.#insert = db.prepare(
      'INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    // Conditional, so a no-op transition is visible as zero changed rows even with concurrent writers.
    this.#setStatus = db.prepare('UPDATE tenants SET status = ? WHERE id = ? AND status <> ?');
  }

  get(id: string): Tenant | undefined {
    const row = this.#get.get(id);
    return row === undefined ? undefined : toTenant(row);
  }

  list(): Tenant[] {
    return this.#list.all().map(toTenant);
  }

  /** Registers an active tenant. @throws SvcError `SVC_ERR_CONFLICT` when the id is taken. */
  create(tenant: NewTenant): Tenant {
    try {
      this.#insert.run(tenant.id, tenant.displayName, 'active', JSON.stringify(tenant.authMethods), tenant.createdAt);
    } catch (err) {
      if (isUniqueViolation(err)) throw tenantExists(tenant.id, err);
      throw err;
    }
    return this.get(tenant.id)!;
  }

  /**
   * Moves a tenant to `status`. Returns true when the row changed, false when the tenant was
   * already in that status or does not exist (callers tell those apart with get()).
   */
  setStatus(id: string, status: TenantStatus): boolean {
    return this.#setStatus.run(status, id, status).changes > 0;
  }
}

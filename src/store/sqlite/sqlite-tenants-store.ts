/** Tenants in the registry database: registration and the active/disabled flag (nothing is ever deleted). */
import { SvcError } from '../../common/errors.js';
import type { Db } from './db.js';
import type { Awaitable } from '../../common/awaitable.js';

export type TenantStatus = 'active' | 'disabled';

export interface Tenant {
  readonly id: string;
  readonly displayName: string;
  readonly status: TenantStatus;
  /** Ordered; today only `api_key` is accepted (checked by app/, not here). */
  readonly authMethods: readonly string[];
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

export interface NewTenant {
  readonly id: string;
  readonly displayName: string;
  readonly authMethods: readonly string[];
  readonly createdAt: string;
}

/** A row of `tenants` as either database returns it. */
export interface TenantRow {
  id: string;
  display_name: string;
  status: TenantStatus;
  auth_methods: string;
  created_at: string;
}

export function toTenant(row: TenantRow): Tenant {
  return Object.freeze({
    id: row.id,
    displayName: row.display_name,
    status: row.status,
    authMethods: Object.freeze(JSON.parse(row.auth_methods) as string[]),
    createdAt: row.created_at,
  });
}

/** A primary-key or unique violation, in SQLite's words or PostgreSQL's (SQLSTATE 23505). */
export function tenantExists(id: string, cause: unknown): SvcError {
  return new SvcError('SVC_ERR_CONFLICT', `tenant "${id}" already exists`, { cause });
}

export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/** The storage contract (store/contracts.ts): implemented here and in store/pg/. */
export interface TenantsStore {
  get(id: string): Awaitable<Tenant | undefined>;
  /** Every tenant, by id. */
  list(): Awaitable<Tenant[]>;
  /** Registers an active tenant. @throws SvcError `SVC_ERR_CONFLICT` when the id is taken. */
  create(tenant: NewTenant): Awaitable<Tenant>;
  /** True when the row changed; false when it already had that status or does not exist. */
  setStatus(id: string, status: TenantStatus): Awaitable<boolean>;
}

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

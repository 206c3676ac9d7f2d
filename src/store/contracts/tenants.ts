/** The tenants contract: a tenant, its row shape and mapper, and the refusals both backends give. */
import { SvcError } from '../../common/errors.js';
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

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface TenantsStore {
  get(id: string): Awaitable<Tenant | undefined>;
  /** Every tenant, by id. */
  list(): Awaitable<Tenant[]>;
  /** Registers an active tenant. @throws SvcError `SVC_ERR_CONFLICT` when the id is taken. */
  create(tenant: NewTenant): Awaitable<Tenant>;
  /** True when the row changed; false when it already had that status or does not exist. */
  setStatus(id: string, status: TenantStatus): Awaitable<boolean>;
}

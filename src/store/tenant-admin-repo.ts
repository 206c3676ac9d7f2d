/**
 * A tenant's registration and status changes together with their audit entries: the contract
 * (TenantAdmin) and its embedded SQLite implementation, which spans two files (the registry and
 * `audit.db`) under the audit database's lock.
 */
import type { Awaitable } from '../common/awaitable.js';
import type { AuditEntryInput, AuditRepo } from './audit-repo.js';
import type { NewTenant, Tenant, TenantsRepo, TenantStatus } from './tenants-repo.js';

/** What a status change found and did. */
export interface TenantStatusChange {
  /** The tenant as it was before the change. */
  readonly before: Tenant;
  /** The tenant as it is after (the same status as `before` when nothing changed). */
  readonly after: Tenant;
  /** False when the tenant already had the requested status: no audit entry was written. */
  readonly changed: boolean;
}

/**
 * The storage contract (store/contracts.ts) for the tenant changes that are audited: each method
 * writes the change and its audit entry atomically, both or neither, so the trail never misses a
 * change and never records one that did not happen.
 *
 * Ordering: entries of one tenant's chain are appended in the order the changes took effect, across
 * processes and nodes (two concurrent status changes of one tenant cannot record their entries in
 * the opposite order). The SQLite implementation takes the audit database's write lock first, then
 * the registry's, in every process; the PostgreSQL one runs the change and the append in one
 * transaction, the audit head row locked last (store/pg/pg-audit-store.ts appendAuditIn).
 *
 * A refused change (a taken id, an unregistered tenant) writes nothing, in either database.
 */
export interface TenantAdmin {
  /**
   * Registers an active tenant and appends `entry` (the caller's `tenant.registered` entry).
   * @returns the tenant as stored
   * @throws SvcError `SVC_ERR_CONFLICT` when the id is taken (no entry is appended)
   */
  createTenant(tenant: NewTenant, entry: AuditEntryInput): Awaitable<Tenant>;
  /**
   * Moves a registered tenant to `status`. When its status changes, appends `auditFor(before)`,
   * the entry made from the tenant as it was before, read in the same transaction; a no-op change
   * appends nothing (and `auditFor` is not called).
   * @returns undefined when the tenant is not registered (nothing is written)
   */
  setTenantStatus(id: string, status: TenantStatus, auditFor: (before: Tenant) => AuditEntryInput): Awaitable<TenantStatusChange | undefined>;
}

/** TenantAdmin on the embedded SQLite store: the registry and audit repositories of one state directory. */
export class TenantAdminRepo implements TenantAdmin {
  readonly #tenants: TenantsRepo;
  readonly #audit: AuditRepo;

  constructor(tenants: TenantsRepo, audit: AuditRepo) {
    this.#tenants = tenants;
    this.#audit = audit;
  }

  createTenant(tenant: NewTenant, entry: AuditEntryInput): Tenant {
    // The audit lock is taken first, so the registry change and its entry are ordered the same way
    // in every process; a refused insert rolls the (empty) audit transaction back.
    return this.#audit.transaction(() => {
      const created = this.#tenants.create(tenant);
      this.#audit.append(entry);
      return created;
    });
  }

  setTenantStatus(id: string, status: TenantStatus, auditFor: (before: Tenant) => AuditEntryInput): TenantStatusChange | undefined {
    return this.#audit.transaction(() => {
      const before = this.#tenants.get(id);
      if (before === undefined) return undefined;
      const changed = this.#tenants.setStatus(id, status);
      if (changed) this.#audit.append(auditFor(before));
      return { before, after: this.#tenants.get(id)!, changed };
    });
  }
}

/**
 * A tenant's registration and status changes together with their audit entries: the contract
 * (TenantAdmin) and its embedded SQLite implementation, which spans two files (the registry and
 * `audit.db`) under the audit database's lock.
 */
import type { SqliteAuditStore } from './sqlite-audit-store.js';
import type { SqliteTenantsStore } from './sqlite-tenants-store.js';
import type {
  TenantStatusChange,
  TenantAdmin,
  AuditEntryInput,
  NewTenant,
  Tenant,
  TenantStatus,
} from '../contracts/index.js';

/** TenantAdmin on the embedded SQLite store: the registry and audit repositories of one state directory. */
export class SqliteTenantAdmin implements TenantAdmin {
  readonly #tenants: SqliteTenantsStore;
  readonly #audit: SqliteAuditStore;

  constructor(tenants: SqliteTenantsStore, audit: SqliteAuditStore) {
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

  setTenantStatus(
    id: string,
    status: TenantStatus,
    auditFor: (before: Tenant) => AuditEntryInput,
  ): TenantStatusChange | undefined {
    return this.#audit.transaction(() => {
      const before = this.#tenants.get(id);
      if (before === undefined) return undefined;
      const changed = this.#tenants.setStatus(id, status);
      if (changed) this.#audit.append(auditFor(before));
      return { before, after: this.#tenants.get(id)!, changed };
    });
  }
}

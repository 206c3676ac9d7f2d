/** TenantAdmin on PostgreSQL: the tenant row and its audit entry in one transaction (both or neither). */
import { appendAuditIn } from './pg-audit-store.js';
import type { PgDb } from './pg-db.js';
import { PgTenantsStore } from './pg-tenants-store.js';
import {
  prepareAuditEntry,
  type AuditEntryInput,
  type TenantAdmin,
  type TenantStatusChange,
  type NewTenant,
  type Tenant,
  type TenantStatus,
} from '../contracts/index.js';

export class PgTenantAdmin implements TenantAdmin {
  constructor(private readonly db: PgDb) {}

  async createTenant(tenant: NewTenant, entry: AuditEntryInput): Promise<Tenant> {
    const prepared = prepareAuditEntry(entry);
    return this.db.transaction(async (tx) => {
      const created = await new PgTenantsStore(tx).create(tenant);
      await appendAuditIn(tx, [prepared]);
      return created;
    });
  }

  async setTenantStatus(
    id: string,
    status: TenantStatus,
    auditFor: (before: Tenant) => AuditEntryInput,
  ): Promise<TenantStatusChange | undefined> {
    return this.db.transaction(async (tx) => {
      const tenants = new PgTenantsStore(tx);
      // The row lock orders concurrent changes of one tenant: the second sees the first's result.
      const locked = await tx.query('SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE', [id]);
      if (locked.rowCount === 0) return undefined;
      const before = (await tenants.get(id))!;
      const changed = await tenants.setStatus(id, status);
      if (changed) await appendAuditIn(tx, [prepareAuditEntry(auditFor(before))]);
      return { before, after: (await tenants.get(id))!, changed };
    });
  }
}

/** The audited tenant changes contract (TenantAdmin). */
import type { Awaitable } from '../../common/awaitable.js';
import type { AuditEntryInput } from './audit.js';
import type { NewTenant, Tenant, TenantStatus } from './tenants.js';

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
 * The storage contract (store/contracts/index.ts) for the tenant changes that are audited: each method is
 * one step that writes the change and its audit entry, so the trail records every change once and
 * never one that did not happen. It replaces the open-ended `SqliteAuditStore.transaction(() => ...)` the
 * use cases held across two repositories.
 *
 * What each backend guarantees:
 * - PostgreSQL: one transaction on one connection writes the tenant row and appends the entry (the
 *   tenant's audit head row locked last, store/pg/pg-audit-store.ts appendAuditIn): both or neither.
 * - SQLite: the registry and `audit.db` are two files. The audit database's write lock is taken
 *   first and held across the registry change and the append, in every process (lock order: audit,
 *   then registry; never the reverse, or two processes wait on each other until the busy timeout).
 *   A refused change appends nothing; an append failing after the registry committed (a full
 *   disk) leaves the change without its entry, as it always has.
 *
 * On both, entries of one tenant's chain are in the order its changes took effect, across processes
 * and nodes: two concurrent status changes cannot record their entries the other way round, and of
 * two concurrent identical changes exactly one reports `changed` and writes an entry.
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
  setTenantStatus(
    id: string,
    status: TenantStatus,
    auditFor: (before: Tenant) => AuditEntryInput,
  ): Awaitable<TenantStatusChange | undefined>;
}

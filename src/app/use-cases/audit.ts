/**
 * Audit trail use cases: the latest entries of a tenant's chain and a full verification.
 *
 * Correlation ids: an entry written without one gets a fresh UUID v4 (never an empty string), so
 * each operator command's entry can be found on its own; request-path entries carry the request's
 * correlation id.
 */
import { SvcError } from '../../common/errors.js';
import type { AuditStore, AuditEntry, AuditVerifyResult } from '../../store/contracts/index.js';
import { assertName } from './tenants.js';

/** `svc audit` shows this many entries unless `-l` says otherwise. */
export const DEFAULT_AUDIT_LIMIT = 20;

export interface AuditListing {
  /** The newest entries, oldest of them first. */
  readonly entries: readonly AuditEntry[];
  /** Entries in the whole chain. */
  readonly total: number;
}

export async function latestAuditEntries(
  audit: AuditStore,
  tenant: string,
  limit: number = DEFAULT_AUDIT_LIMIT,
): Promise<AuditListing> {
  assertName('tenant', tenant);
  if (!Number.isInteger(limit) || limit < 1)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the limit must be a whole number of at least 1, got ${limit}`);
  return { entries: await audit.latest(tenant, limit), total: await audit.count(tenant) };
}

/** Recomputes the tenant's whole chain; `ok: false` names the first broken seq and why. */
export async function verifyAuditChain(audit: AuditStore, tenant: string): Promise<AuditVerifyResult> {
  assertName('tenant', tenant);
  return audit.verify(tenant);
}

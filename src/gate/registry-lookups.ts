/** The gate's lookups over the registry: the key and the tenant by indexed (cached) reads, and the latest artifact's required scope. */
import { IntegrityError } from '../common/errors.js';
import type { GateLookups } from './gate.js';
import type { RegistryReads } from '../store/contracts/index.js';

/**
 * @param requiredScope the latest artifact's `required_scope` of (tenant, flow); may throw
 *   IntegrityError for a corrupt artifact, which is the route's 500, not the gate's 503
 */
export function registryGateLookups(
  cache: RegistryReads,
  requiredScope: (tenant: string, flow: string) => string | undefined,
): GateLookups {
  return {
    findKeyByHash: (hash) => {
      const row = cache.findKeyByHash(hash);
      if (row === undefined) return undefined;
      return {
        id: row.id,
        tenant: row.tenant,
        scopes: row.scopes,
        flows: row.flows,
        rateLimit: row.rateLimit ?? undefined,
        revoked: row.revokedAt !== null && row.revokedAt !== undefined,
        expiresAt: row.expiresAt ?? undefined,
      };
    },
    tenantStatus: (tenant) => cache.tenant(tenant)?.status,
    requiredScope: (tenant, flow) => {
      try {
        return requiredScope(tenant, flow);
      } catch (err) {
        if (err instanceof IntegrityError) return undefined;
        throw err;
      }
    },
  };
}

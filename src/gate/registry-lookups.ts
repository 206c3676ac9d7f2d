/** The gate's lookups over the registry: the key and the tenant by indexed (cached) reads, and the latest artifact. */
import { IntegrityError } from '../common/errors.js';
import type { GateFlow, GateLookups } from './gate.js';
import type { RegistryReads } from '../store/contracts/index.js';

/**
 * @param latestFlow the latest artifact of (tenant, flow); may throw IntegrityError for a corrupt
 *   artifact, which is the route's 500, not the gate's 503 (the gate passes without it, and the
 *   route's own lookup meets the error)
 */
export function registryGateLookups<F extends GateFlow>(
  cache: RegistryReads,
  latestFlow: (tenant: string, flow: string) => F | undefined,
): GateLookups<F> {
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
    latestFlow: (tenant, flow) => {
      try {
        return latestFlow(tenant, flow);
      } catch (err) {
        if (err instanceof IntegrityError) return undefined;
        throw err;
      }
    },
  };
}

/**
 * `svc dev`'s deploy of one saved flow file: compiled with every check, then published under an
 * automatic version label unless the flow's latest version already holds the same artifact. In a
 * development state directory an unregistered tenant is registered on the way (audited).
 */
import { isoNow } from '../../common/clock.js';
import type { FlowDiagnostic, FlowWarning } from '../../flow/diagnostics.js';
import { FlowPublicationError } from '../../flow/diagnostics.js';
import type { ArtifactsStore, TenantAdmin, TenantsStore } from '../../store/contracts/index.js';
import { compileForPublication, type SourceOptions } from './publish.js';
import { createTenant, TenantNotActiveError } from './tenants.js';

/** Recorded as the actor of the tenants `svc dev` registers. */
export const DEV_ACTOR = 'svc dev';

export interface DevDeployDeps {
  readonly tenants: TenantsStore;
  readonly artifacts: ArtifactsStore;
  readonly tenantAdmin: TenantAdmin;
}

export interface DevDeployRequest extends SourceOptions {
  /** Publish under this tenant instead of the front matter's. @default the front matter's */
  readonly tenant?: string;
}

interface Published {
  readonly tenant: string;
  readonly flow: string;
  readonly version: string;
  readonly hash: string;
  readonly warnings: readonly FlowWarning[];
}

export type DevDeployOutcome =
  /** The file does not compile: nothing was published. */
  | {
      readonly kind: 'refused';
      readonly diagnostics: readonly FlowDiagnostic[];
      readonly warnings: readonly FlowWarning[];
    }
  /** The latest version (`version`) already holds this artifact: nothing was published. */
  | ({ readonly kind: 'unchanged' } & Published)
  /** Published under `version`, now latest; `registeredTenant` when the tenant was registered first. */
  | ({ readonly kind: 'deployed'; readonly registeredTenant: boolean } & Published);

/**
 * The version label of a dev deploy: `dev-<UTC time to the millisecond>-<first 8 hex of the hash>`,
 * e.g. `dev-20260131T080000.123Z-1a2b3c4d`. Labels of one flow sort by time, and two saves of
 * different content in one millisecond still get different labels.
 */
export function devVersionLabel(hash: string, at: Date): string {
  return `dev-${at.toISOString().replace(/[-:]/g, '')}-${hash.slice(0, 8)}`;
}

/**
 * Compiles `req.path` and publishes it when its artifact differs from the flow's latest.
 * @throws TenantNotActiveError for a disabled tenant; SvcError when the file cannot be read
 */
export async function devDeployFile(
  deps: DevDeployDeps,
  req: DevDeployRequest,
  at: Date = new Date(),
): Promise<DevDeployOutcome> {
  let compiled;
  try {
    compiled = compileForPublication(req);
  } catch (err) {
    if (err instanceof FlowPublicationError)
      return { kind: 'refused', diagnostics: err.diagnostics, warnings: err.warnings };
    throw err;
  }
  const { tenant, flow } = compiled.ir;
  const latest = await deps.artifacts.resolveLatest(tenant, flow);
  if (latest?.hash === compiled.hash)
    return {
      kind: 'unchanged',
      tenant,
      flow,
      version: latest.version,
      hash: compiled.hash,
      warnings: compiled.warnings,
    };
  const registeredTenant = await ensureTenant(deps, tenant);
  const version = devVersionLabel(compiled.hash, at);
  await deps.artifacts.publish({
    tenant,
    name: flow,
    version,
    bytes: compiled.bytes,
    hash: compiled.hash,
    createdAt: isoNow(at),
    source: compiled.source,
  });
  return {
    kind: 'deployed',
    tenant,
    flow,
    version,
    hash: compiled.hash,
    warnings: compiled.warnings,
    registeredTenant,
  };
}

/** True when the tenant had to be registered; a disabled tenant stays disabled and refuses. */
async function ensureTenant(deps: DevDeployDeps, id: string): Promise<boolean> {
  const tenant = await deps.tenants.get(id);
  if (tenant === undefined) {
    await createTenant(deps, { id, displayName: id }, { actor: DEV_ACTOR });
    return true;
  }
  if (tenant.status !== 'active') throw new TenantNotActiveError(id, 'disabled');
  return false;
}

/**
 * Payload tracing use cases: turn a flow's trace flag on or off (sysadmin only, audited once per real
 * change), list the flags, and read trace rows (support only, filtered where rows are selected). The
 * CLI and the UI call these; nothing else reads trace rows.
 */
import { isoNow } from '../common/clock.js';
import { SvcError } from '../common/errors.js';
import { describeNameProblem } from '../common/names.js';
import type { ArtifactsRepo } from '../store/artifacts-repo.js';
import type { AuditRepo } from '../store/audit-repo.js';
import type { EventLogRepo, StoredEvent, TraceQuery } from '../store/event-log-repo.js';
import type { TenantsRepo } from '../store/tenants-repo.js';
import type { TraceFlag, TraceRepo } from '../store/trace-repo.js';
import type { Actor } from './roles.js';
import { requireTenant } from './tenants.js';

export interface TraceFlagDeps {
  readonly traces: TraceRepo;
  readonly tenants: TenantsRepo;
  readonly artifacts: ArtifactsRepo;
  readonly audit: AuditRepo;
}

export interface TraceToggle {
  readonly tenant: string;
  readonly flow: string;
  readonly enabled: boolean;
}

/** What a toggle did: `changed` false for the same toggle again (nothing written, no audit row). */
export interface TraceToggleResult extends TraceToggle {
  readonly changed: boolean;
}

/**
 * Sets the trace flag of a deployed flow. Takes effect in every process sharing the state directory
 * at its next request (they revalidate by the registry's change counter); no redeploy.
 * @throws SvcError 403 for a role other than sysadmin, 400 for a name breaking the name rule, 404
 *   for an unregistered tenant or a flow with no deployed version; nothing is changed
 */
export function setTraceFlag(deps: TraceFlagDeps, toggle: TraceToggle, actor: Actor): TraceToggleResult {
  if (actor.role !== 'sysadmin') throw new SvcError('SVC_ERR_FORBIDDEN', `only a sysadmin may turn tracing ${toggle.enabled ? 'on' : 'off'}; ${actor.name} is ${actor.role}`);
  for (const [what, value] of [['tenant', toggle.tenant], ['flow', toggle.flow]] as const) {
    const problem = describeNameProblem(what, value);
    if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
  }
  requireTenant(deps.tenants, toggle.tenant);
  if (deps.artifacts.resolveLatest(toggle.tenant, toggle.flow) === undefined) {
    throw new SvcError('SVC_ERR_NOT_FOUND', `flow '${toggle.tenant}/${toggle.flow}' is not deployed; deploy it first with: svc deploy <file> -v <version>`);
  }
  const changed = deps.traces.set(toggle.tenant, toggle.flow, toggle.enabled, isoNow());
  if (changed) {
    deps.audit.append({
      tenant: toggle.tenant,
      eventType: toggle.enabled ? 'trace_enabled' : 'trace_disabled',
      payload: { flow: toggle.flow, actor: actor.name },
    });
  }
  return { ...toggle, changed };
}

/** The stored flags (a flow never toggled is off and has none), of one tenant or all. */
export function listTraceFlags(traces: TraceRepo, tenant?: string): TraceFlag[] {
  return traces.list(tenant);
}

/**
 * Trace rows (`step_traced`, `egress_traced`), oldest first. Only the `support` role reads them:
 * for any other role the query itself selects nothing, so zero rows come back.
 */
export function readTraceRows(log: EventLogRepo, filter: TraceQuery, actor: Actor): StoredEvent[] {
  return log.queryTrace(filter, actor.role === 'support');
}

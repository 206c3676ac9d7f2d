/**
 * Payload tracing use cases: turn a flow's trace flag on or off (sysadmin only, audited once per real
 * change), list the flags, and read trace rows (support only, filtered where rows are selected). The
 * CLI and the UI call these; nothing else reads trace rows.
 */
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';
import type {
  ArtifactsStore,
  AuditStore,
  TenantsStore,
  TraceStore,
  EventLogStore,
  StoredEvent,
  TraceQuery,
  TraceFlag,
} from '../../store/contracts/index.js';
import type { Actor } from '../accounts/roles.js';
import { requireTenant } from './tenants.js';
import { exampleFromDelivery, NotRecordedError } from '../testing/recorded-example.js';
import { recordedDeliveryRows } from './replay-rows.js';

export interface TraceFlagDeps {
  readonly traces: TraceStore;
  readonly tenants: TenantsStore;
  readonly artifacts: ArtifactsStore;
  readonly audit: AuditStore;
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
export async function setTraceFlag(deps: TraceFlagDeps, toggle: TraceToggle, actor: Actor): Promise<TraceToggleResult> {
  if (actor.role !== 'sysadmin')
    throw new SvcError(
      'SVC_ERR_FORBIDDEN',
      `only a sysadmin may turn tracing ${toggle.enabled ? 'on' : 'off'}; ${actor.name} is ${actor.role}`,
    );
  for (const [what, value] of [
    ['tenant', toggle.tenant],
    ['flow', toggle.flow],
  ] as const) {
    const problem = describeNameProblem(what, value);
    if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
  }
  await requireTenant(deps.tenants, toggle.tenant);
  if ((await deps.artifacts.resolveLatest(toggle.tenant, toggle.flow)) === undefined) {
    throw new SvcError(
      'SVC_ERR_NOT_FOUND',
      `flow '${toggle.tenant}/${toggle.flow}' is not deployed; deploy it first with: svc deploy <file> -v <version>`,
    );
  }
  const changed = await deps.traces.set(toggle.tenant, toggle.flow, toggle.enabled, isoNow());
  if (changed) {
    await deps.audit.append({
      tenant: toggle.tenant,
      eventType: toggle.enabled ? 'trace_enabled' : 'trace_disabled',
      payload: { flow: toggle.flow, actor: actor.name },
    });
  }
  return { ...toggle, changed };
}

/** The stored flags (a flow never toggled is off and has none), of one tenant or all. */
export async function listTraceFlags(traces: TraceStore, tenant?: string): Promise<TraceFlag[]> {
  return traces.list(tenant);
}

/**
 * Trace rows (`step_traced`, `egress_traced`), oldest first. Only the `support` role reads them:
 * for any other role the query itself selects nothing, so zero rows come back.
 */
export async function readTraceRows(log: EventLogStore, filter: TraceQuery, actor: Actor): Promise<StoredEvent[]> {
  return log.queryTrace(filter, actor.role === 'support');
}

/** Which delivery to turn into an example. */
export interface RecordedExampleQuery {
  readonly tenant: string;
  readonly flow: string;
  readonly correlationId: string;
}

/**
 * A traced delivery as a `.test.md` example section (app/testing/recorded-example.ts), for the
 * support role only, like every trace row it is made of. Throws SvcError 403 for another role,
 * 404 when the delivery was not traced.
 */
export async function recordedExample(log: EventLogStore, q: RecordedExampleQuery, actor: Actor): Promise<string> {
  if (actor.role !== 'support')
    throw new SvcError('SVC_ERR_FORBIDDEN', 'only the support role reads trace rows, and an example made of them');
  try {
    for await (const delivery of recordedDeliveryRows(log, q)) return exampleFromDelivery(delivery);
    throw new NotRecordedError(`delivery ${q.correlationId} was not found`);
  } catch (err) {
    if (err instanceof NotRecordedError) throw new SvcError('SVC_ERR_NOT_FOUND', err.message);
    throw err;
  }
}

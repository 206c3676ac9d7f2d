/** The service at a glance (the UI's Overview page): how much is registered, the queues, the last hour's runs. */
import type { ArtifactsStore, KeysStore, TenantsStore } from '../../store/contracts/index.js';
import type { EventCounts, EventLogStore } from '../../store/contracts/index.js';
import { queueFigures, type DlqTarget, type QueueFigures } from './dlq.js';
import { listAllApiKeys } from './keys.js';

export interface OverviewDeps {
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly events: EventLogStore;
  readonly queues: DlqTarget;
}

export interface ServiceOverview {
  readonly tenants: number;
  /** Flows with a latest version. */
  readonly flows: number;
  /** API keys of every tenant, revoked and expired ones included. */
  readonly keys: number;
  readonly queues: readonly QueueFigures[];
  /** Event-log rows of the hour before `now`, by kind. */
  readonly lastHour: EventCounts;
  /**
   * Where `lastHour` starts (ISO 8601 UTC, milliseconds): a log search from it (`since`) finds the
   * rows counted, e.g. `event=completed` the runs, with `status=400-599` the failed ones.
   */
  readonly lastHourSince: string;
}

/** The statuses of a failed run, as `EventCounts.failedCompletions` counts them (a status filter, `parseStatus`). */
export const FAILED_RUN_STATUSES = '400-599';

const HOUR_MS = 3_600_000;

export async function serviceOverview(deps: OverviewDeps, now: number = Date.now()): Promise<ServiceOverview> {
  const { tenants, keys } = await listAllApiKeys(deps);
  const flows = await deps.artifacts.listLatest();
  const queues = await queueFigures(deps.queues, now);
  const lastHourSince = new Date(now - HOUR_MS).toISOString();
  const lastHour = await deps.events.countsSince(lastHourSince);
  return {
    tenants: tenants.length,
    flows: flows.length,
    keys: keys.length,
    queues,
    lastHour,
    lastHourSince,
  };
}

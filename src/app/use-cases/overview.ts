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
   * Queue deliveries that finished in that hour (`queue_processed` and `queue_filtered` rows): what
   * the queues' `processed` figure counts, and the metric `queue_messages_processed_total`.
   */
  readonly queueProcessedLastHour: number;
}

const HOUR_MS = 3_600_000;

export async function serviceOverview(deps: OverviewDeps, now: number = Date.now()): Promise<ServiceOverview> {
  const { tenants, keys } = await listAllApiKeys(deps);
  const flows = await deps.artifacts.listLatest();
  const queues = await queueFigures(deps.queues, now);
  const lastHour = await deps.events.countsSince(new Date(now - HOUR_MS).toISOString());
  const queueProcessedLastHour = (lastHour.byEvent.queue_processed ?? 0) + (lastHour.byEvent.queue_filtered ?? 0);
  return { tenants: tenants.length, flows: flows.length, keys: keys.length, queues, lastHour, queueProcessedLastHour };
}

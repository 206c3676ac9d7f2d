/** Where the metrics' scrape-time figures come from, and the listener of `--metrics-port`. */
import { listCertificates } from '../app/use-cases/certificates.js';
import { queueFigures, type QueueFigures } from '../app/use-cases/dlq.js';
import type { QueueWait, QueueWorkers } from '../app/runtime/queue-workers.js';
import type { Logger } from '../common/logger.js';
import { startMetricsListener } from '../doors/http/metrics-route.js';
import type { MetricsExposition } from '../doors/http/observer.js';
import type { QueueStore } from '../queue/index.js';
import type { Closers } from './closers.js';
import type { ScrapeSources } from './metrics.js';
import type { ServeStores } from './stores.js';

export function metricsSources(stores: ServeStores, queueStore: QueueStore, workers: QueueWorkers): ScrapeSources {
  return {
    queues: async () =>
      boundedQueueLabels(
        await queueFigures({ store: queueStore }),
        (tenant, flow) => stores.flows.latest(tenant, flow) !== undefined,
      ),
    workersRunning: () => workers.workerCount,
    queuesWaiting: () =>
      boundedWaitLabels(workers.waiting(), (tenant, flow) => stores.flows.latest(tenant, flow) !== undefined),
    eventLog: () => ({ queuedRows: stores.events.queuedRows, droppedRows: stores.events.droppedRows }),
    auditQueued: () => stores.audit.queuedEntries,
    // The current entry of each name (a replaced one no longer serves), as `svc cert list` reads them.
    certificates: async () =>
      (
        await listCertificates(
          { certificates: stores.certificates },
          { warningDays: stores.setting('cert_warning_days') },
        )
      )
        .filter((v) => v.row.status === 'current')
        .map((v) => ({ tenant: v.row.tenant, name: v.row.name, validToMs: Date.parse(v.row.validTo) })),
  };
}

/** The `flow` label of the queues of flows not deployed (any key holder can /enqueue to any name of its tenant). */
export const UNDEPLOYED_FLOW_LABEL = '_undeployed';

/**
 * Series with labels bounded by what is deployed: those of flows that are not (an /enqueue to any
 * name is stored, as the spec says) are folded by `merge` into one per tenant, flow `_undeployed`.
 */
function foldUndeployed<T extends { readonly tenant: string; readonly flow: string }>(
  items: readonly T[],
  deployed: (tenant: string, flow: string) => boolean,
  merge: (sum: T, next: T) => T,
): T[] {
  const out = new Map<string, T>();
  for (const item of items) {
    if (deployed(item.tenant, item.flow)) {
      out.set(`${item.tenant}/${item.flow}`, item);
      continue;
    }
    const key = `${item.tenant}/`;
    const sum = out.get(key);
    out.set(key, sum === undefined ? { ...item, flow: UNDEPLOYED_FLOW_LABEL } : merge(sum, item));
  }
  return [...out.values()];
}

/** Queue figures with bounded labels: the counters of queues of flows not deployed summed per tenant. */
export function boundedQueueLabels(
  figures: readonly QueueFigures[],
  deployed: (tenant: string, flow: string) => boolean,
): QueueFigures[] {
  return foldUndeployed(figures, deployed, (sum, q) => ({
    ...sum,
    pending: sum.pending + q.pending,
    retriesScheduled: sum.retriesScheduled + q.retriesScheduled,
    deadLettersPending: sum.deadLettersPending + q.deadLettersPending,
  }));
}

/** Waiting queues with bounded labels: those of flows not deployed one per tenant, with the longest wait. */
export function boundedWaitLabels(
  waits: readonly QueueWait[],
  deployed: (tenant: string, flow: string) => boolean,
): QueueWait[] {
  return foldUndeployed(waits, deployed, (sum, w) => (w.waitedMs > sum.waitedMs ? { ...w, flow: sum.flow } : sum));
}

/** `--metrics-port`: `GET /metrics` alone on its own port; resolves to its base URL. */
export async function startMetricsDoor(
  host: string,
  port: number,
  exposition: MetricsExposition,
  log: Logger,
  closers: Closers,
): Promise<string> {
  const listener = await startMetricsListener(host, port, exposition, (err) =>
    log.error({ err }, 'metrics scrape failed'),
  );
  closers.add(() => listener.close());
  return listener.address;
}

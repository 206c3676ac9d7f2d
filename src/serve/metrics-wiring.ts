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
 * Queue figures with labels bounded by what is deployed: the queues of flows that are not (an
 * /enqueue to any name is stored, as the spec says) are summed into one per tenant.
 */
export function boundedQueueLabels(
  figures: readonly QueueFigures[],
  deployed: (tenant: string, flow: string) => boolean,
): QueueFigures[] {
  const out = new Map<string, QueueFigures>();
  for (const q of figures) {
    if (deployed(q.tenant, q.flow)) {
      out.set(`${q.tenant}/${q.flow}`, q);
      continue;
    }
    const key = `${q.tenant}/`;
    const sum = out.get(key);
    out.set(
      key,
      sum === undefined
        ? { ...q, flow: UNDEPLOYED_FLOW_LABEL }
        : {
            ...sum,
            pending: sum.pending + q.pending,
            retriesScheduled: sum.retriesScheduled + q.retriesScheduled,
            deadLettersPending: sum.deadLettersPending + q.deadLettersPending,
          },
    );
  }
  return [...out.values()];
}

/** Waiting queues with labels bounded as boundedQueueLabels does: one per tenant for flows not deployed, with the longest wait. */
export function boundedWaitLabels(
  waits: readonly QueueWait[],
  deployed: (tenant: string, flow: string) => boolean,
): QueueWait[] {
  const out = new Map<string, QueueWait>();
  for (const w of waits) {
    const own = deployed(w.tenant, w.flow);
    const key = own ? `${w.tenant}/${w.flow}` : `${w.tenant}/`;
    const was = out.get(key);
    if (was === undefined || w.waitedMs > was.waitedMs) out.set(key, own ? w : { ...w, flow: UNDEPLOYED_FLOW_LABEL });
  }
  return [...out.values()];
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

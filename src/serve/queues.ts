/** The queue side of `svc serve`: the durable store, its workers (running deliveries through the executor) and queue_publish. */
import { queuePublishEffect } from '../app/queue-publish.js';
import { QueueWorkers } from '../app/queue-workers.js';
import type { Logger } from '../common/logger.js';
import type { StatePaths } from '../common/paths.js';
import { Settings } from '../common/settings.js';
import { QueueStore, type QueueBackend } from '../queue/index.js';
import { isAccepted } from '../store/settings-repo.js';
import type { Closers } from './closers.js';
import type { ServeExecutor } from './executor.js';
import type { ServeStores } from './stores.js';

export interface ServeQueues {
  readonly store: QueueBackend;
  readonly workers: QueueWorkers;
}

export function buildQueues(paths: StatePaths, stores: ServeStores, run: ServeExecutor, log: Logger, closers: Closers): ServeQueues {
  const store = new QueueStore({ queuesDir: paths.queuesDir });
  // Closed after the HTTP door (closers run in reverse): workers stop, checkpoints are written, locks released.
  closers.add(() => store.close());
  const workers = new QueueWorkers({
    store,
    loadFlow: (tenant, name) => stores.flows.latest(tenant, name),
    setting: stores.setting,
    perTenantSet: () => {
      const raw = stores.settings.raw('max_queue_workers_per_tenant');
      return raw !== undefined && isAccepted(Settings.max_queue_workers_per_tenant, raw.trim());
    },
    events: stores.events,
    audit: stores.audit,
    traceEnabled: (tenant, flow) => stores.cache.traceEnabled(tenant, flow),
    executor: run.executor,
    log,
  });
  closers.add(() => workers.close());
  run.setQueuePublish(queuePublishEffect(workers));
  return { store, workers };
}

/** The queue side of `svc serve`: the durable store, its workers (running deliveries through the executor) and queue_publish. */
import { queuePublishEffect } from '../app/runtime/queue-publish.js';
import { QueueWorkers } from '../app/runtime/queue-workers.js';
import type { Logger } from '../common/logger.js';
import type { EffectHandler } from '../engine/index.js';
import { Settings } from '../common/settings.js';
import { startPeriodicTask } from '../housekeeping/periodic-task.js';
import type { QueueStore } from '../queue/index.js';
import { isAccepted } from '../store/contracts/index.js';
import type { Closers } from './closers.js';
import type { ServeExecutor } from './executor.js';
import type { ServeStores } from './stores.js';

/** How often a node of a cluster looks for queues holding messages that no node runs (a node died). Milliseconds. */
export const ORPHAN_SWEEP_MS = 2000;

export interface ServeQueues {
  readonly store: QueueStore;
  readonly workers: QueueWorkers;
}

export interface BuildQueuesOptions {
  /**
   * Serve the queues that already hold messages: on a state directory once at start (the backlog a
   * stopped process left); on a store whose queues a dead worker's holder leaves behind
   * (QueueStore.adoptsOrphans: PostgreSQL), at start and every ORPHAN_SWEEP_MS, for queues that
   * hold messages and have no worker on any node. A server does; a one-off command that runs flows
   * (`svc seed`) does not take over the installation's queues, it runs only those its own runs
   * publish to, while it runs.
   * @default true
   */
  readonly adoptOrphans?: boolean;
}

/**
 * The `queue_publish` effect, handed to the executor when it is built, and the queue workers it
 * submits through, connected once they exist. A run may publish to a queue whose worker runs
 * flows, so the executor and the workers need each other; the executor is built first (its HTTP
 * pools are closed after the workers, which may still use them in their grace period: closers run
 * in reverse), and this is the one reference filled in after. Nothing runs a flow before
 * buildQueues returns: the doors and timers start after it.
 */
export interface QueuePublishTarget {
  readonly effect: EffectHandler;
  connect(workers: Pick<QueueWorkers, 'publish'>): void;
}

export function queuePublishTarget(): QueuePublishTarget {
  let workers: Pick<QueueWorkers, 'publish'> | undefined;
  const effect = queuePublishEffect({
    publish: (...args) => {
      if (workers === undefined) throw new Error('queue_publish ran before the queue workers were built');
      return workers.publish(...args);
    },
  });
  return { effect, connect: (w) => void (workers = w) };
}

/** Starts the workers on the queue backend of the opened store (its lease on PostgreSQL: serve/stores.ts). */
export async function buildQueues(
  stores: ServeStores,
  run: ServeExecutor,
  publishTarget: QueuePublishTarget,
  log: Logger,
  closers: Closers,
  opts: BuildQueuesOptions = {},
): Promise<ServeQueues> {
  const store: QueueStore = stores.opened.queues;
  // Closed after the HTTP door (closers run in reverse): workers stop, checkpoints are written, locks released.
  closers.add(() => store.close());
  // Read once, at start (a startup setting).
  const perTenantRaw = await stores.settings.raw('max_queue_workers_per_tenant');
  const workers = new QueueWorkers({
    store,
    loadFlow: (tenant, name) => stores.flows.latest(tenant, name),
    setting: stores.setting,
    perTenantSet: () =>
      perTenantRaw !== undefined && isAccepted(Settings.max_queue_workers_per_tenant, perTenantRaw.trim()),
    events: stores.events,
    audit: stores.audit,
    traceEnabled: (tenant, flow) => stores.cache.traceEnabled(tenant, flow),
    executor: run.executor,
    log,
  });
  closers.add(() => workers.close());
  publishTarget.connect(workers);
  if (!store.adoptsOrphans && opts.adoptOrphans !== false) {
    // A state directory: the backlog a stopped or killed process left (waiting messages, due or
    // scheduled retries) is served from the start, with no new submission (docs/queues.md, where
    // we differ from the specification). The scan runs after start-up, not in its way.
    const resuming = (async () => {
      const lined = workers.adoptOrphans(await store.queuesWithMessages());
      if (lined > 0) log.info({ queues: lined }, 'resumed the backlog of the queues holding messages');
    })().catch((err: unknown) => log.error({ err }, 'the backlog of the queues could not be resumed at start'));
    // Awaited before the workers close (closers run in reverse): no worker starts after they did.
    closers.add(() => resuming);
  }
  if (store.adoptsOrphans && opts.adoptOrphans !== false) {
    // A cluster: the queues a dead node ran (its lease gone) are taken over by whichever node looks first.
    const sweep = startPeriodicTask({
      name: 'queue hand-over',
      intervalMs: () => ORPHAN_SWEEP_MS,
      log,
      runAtStart: true,
      run: async () => void workers.adoptOrphans(await store.queuesWithMessages()),
    });
    closers.add(() => sweep.stop());
  }
  return { store, workers };
}

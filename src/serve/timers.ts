/** The background parts of `svc serve`: queue compaction, housekeeping (retention, purge, reconcile) and the cron scheduler. */
import type { Correlations, EnqueueFn } from '../app/runtime/correlation.js';
import type { FlowExecutor } from '../app/runtime/flow-executor.js';
import type { QueueWorkers } from '../app/runtime/queue-workers.js';
import { Scheduler, scheduledFlows } from '../app/runtime/scheduler.js';
import type { Logger } from '../common/logger.js';
import type { FlowIR } from '../ir/types.js';
import { Housekeeping } from '../housekeeping/housekeeping.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { startQueueCompaction } from '../housekeeping/queue-compaction.js';
import type { Coordination, QueueStore } from '../queue/index.js';
import type { Closers } from './closers.js';
import { startPeriodicTask } from '../housekeeping/periodic-task.js';

/** How long registry changes are kept, and how often older ones are pruned. Milliseconds. */
const REGISTRY_CHANGES_KEEP_MS = 3_600_000;
const REGISTRY_CHANGES_PRUNE_MS = 600_000;
const NOTHING_RETAINED = Object.freeze({
  rowsDeleted: 0,
  pagesFreed: 0,
  longestDeleteSliceMs: 0,
  longestVacuumSliceMs: 0,
  stopped: false,
});
import type { ServeStores } from './stores.js';

interface TimerParts {
  /** Where this node's daily log files are: the state directory's `logs/`, or `--log-files` with `--store` (none without). */
  readonly logFilesDir: string | undefined;
  /** Whose locks make one process (or node) run the scheduler and the cluster-wide housekeeping. */
  readonly coordination: Coordination;
  /** On a cluster: claims one cron tick (schedule_ticks). */
  readonly claimTick?: (tenant: string, flow: string, tickAt: string) => Promise<boolean>;
  readonly stores: ServeStores;
  readonly executor: FlowExecutor;
  readonly correlations: Correlations;
  readonly queueStore: QueueStore;
  readonly queues: QueueWorkers;
  /** The latest IR of every deployed flow, read at start-up (the schedules). */
  readonly flows: readonly FlowIR[];
  readonly log: Logger;
}

/** Queue compaction, started before the doors open (its interval is a setting, read per cycle). */
export function startCompaction(parts: Pick<TimerParts, 'stores' | 'queueStore' | 'log'>, closers: Closers): void {
  const compaction = startQueueCompaction({
    compact: () => parts.queueStore.compact(),
    intervalSecs: () => parts.stores.setting('queue_compaction_interval_secs'),
    log: parts.log,
  });
  closers.add(() => compaction.stop());
}

/** Housekeeping timers and the cron scheduler; stopped before the doors and the databases close. */
export async function startTimers(parts: TimerParts, closers: Closers): Promise<void> {
  // No closure below may capture `parts`: it holds every deployed flow's IR from the start-up scan
  // (10,000 flows: 12 MB of heap kept for the life of the process, measured in a heap snapshot).
  const { stores, log, queues } = parts;
  // A timed-out correlation queues its compensating flow like any submission (worker started too).
  const compensatingEnqueue: EnqueueFn = (tenant, flow, m) => queues.enqueue(tenant, flow, m.payload, m.correlationId);
  const intervals = housekeepingIntervals();
  const coordination = parts.coordination;
  // Read only once the duty below exists (housekeeping.start() and later).
  const leading = (): boolean => duty === undefined || duty.leading();
  const housekeeping = new Housekeeping({
    log,
    intervals,
    leading,
    // Every node retains its own daily files; the rows are the cluster's, retained by the leader.
    logRows: {
      retainRows: (request, stopping) =>
        leading() ? stores.events.retainRows(request, stopping) : Promise.resolve(NOTHING_RETAINED),
    },
    logsDir: parts.logFilesDir ?? '',
    logRetentionDays: () => stores.setting('log_retention_days'),
    flowState: stores.flowState,
    // On SQLite the purge gives the registry's free pages back afterwards (PostgreSQL: nothing to give back).
    reclaimFlowStatePages: (opts) => stores.flowState.reclaimFreePages(opts),
    flowStateRetentionHours: stores.setting('flow_state_retention_hours'),
    correlations: parts.correlations,
    enqueue: compensatingEnqueue,
    certSweep: {
      certificates: stores.certificates,
      events: stores.events,
      warningDays: () => stores.setting('cert_warning_days'),
      intervalMs: intervals.certSweepMs ?? stores.setting('cert_check_interval_hours') * 3_600_000,
    },
  });
  // Taken (at start, or from a node that died), the duty runs the cluster-wide cycles at once.
  const duty = coordination.startHousekeepingDuty(log, () => housekeeping.leadTaken());
  if (duty !== undefined) closers.add(() => duty.stop());
  housekeeping.start();
  closers.add(() => housekeeping.stop());
  const cluster = stores.opened.cluster;
  if (cluster !== undefined) {
    // The registry change log every node follows: pruned once per cluster, by the housekeeping node.
    const prune = startPeriodicTask({
      name: 'registry change log prune',
      intervalMs: () => REGISTRY_CHANGES_PRUNE_MS,
      log,
      runAtStart: false,
      run: async () => void (leading() ? await cluster.pruneRegistryChanges(REGISTRY_CHANGES_KEEP_MS) : 0),
    });
    closers.add(() => prune.stop());
  }
  const claimTick = parts.claimTick;
  const scheduler = new Scheduler(scheduledFlows(parts.flows, log), {
    takeLead: (leaseMs) => coordination.takeSchedulerLock(leaseMs),
    claimTick: claimTick === undefined ? undefined : (f, tickAt) => claimTick(f.tenant, f.flow, tickAt),
    executor: parts.executor,
    log,
    pollMs: intervals.schedulerPollMs,
    leaseMs: intervals.schedulerLeaseMs,
  });
  await scheduler.start();
  closers.add(() => scheduler.stop());
}

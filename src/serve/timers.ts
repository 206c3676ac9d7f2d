/** The background parts of `svc serve`: queue compaction, housekeeping (retention, purge, reconcile) and the cron scheduler. */
import type { Correlations, EnqueueFn } from '../app/correlation.js';
import type { FlowExecutor } from '../app/flow-executor.js';
import type { QueueWorkers } from '../app/queue-workers.js';
import { Scheduler, scheduledFlows } from '../app/scheduler.js';
import type { Logger } from '../common/logger.js';
import type { StatePaths } from '../common/paths.js';
import type { FlowIR } from '../ir/types.js';
import { Housekeeping } from '../housekeeping/housekeeping.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { startQueueCompaction } from '../housekeeping/queue-compaction.js';
import type { QueueBackend } from '../queue/index.js';
import type { Closers } from './closers.js';
import type { ServeStores } from './stores.js';

interface TimerParts {
  readonly paths: StatePaths;
  readonly stores: ServeStores;
  readonly executor: FlowExecutor;
  readonly correlations: Correlations;
  readonly queueStore: QueueBackend;
  readonly queues: QueueWorkers;
  /** The latest IR of every deployed flow, read at start-up (the schedules). */
  readonly flows: readonly FlowIR[];
  readonly log: Logger;
}

/** Queue compaction, started before the doors open (its interval is a setting, read per cycle). */
export function startCompaction(parts: Pick<TimerParts, 'stores' | 'queueStore' | 'log'>, closers: Closers): void {
  const compaction = startQueueCompaction({ compact: () => parts.queueStore.compact(), intervalSecs: () => parts.stores.setting('queue_compaction_interval_secs'), log: parts.log });
  closers.add(() => compaction.stop());
}

/** Housekeeping timers and the cron scheduler; stopped before the doors and the databases close. */
export async function startTimers(parts: TimerParts, closers: Closers): Promise<void> {
  // No closure below may capture `parts`: it holds every deployed flow's IR from the start-up scan
  // (10,000 flows: 12 MB of heap kept for the life of the process, measured in a heap snapshot).
  const { paths, stores, log, queues } = parts;
  // A timed-out correlation queues its compensating flow like any submission (worker started too).
  const compensatingEnqueue: EnqueueFn = (tenant, flow, m) => queues.enqueue(tenant, flow, m.payload, m.correlationId);
  const intervals = housekeepingIntervals();
  const housekeeping = new Housekeeping({
    log,
    intervals,
    logRows: stores.events,
    logsDir: paths.logsDir,
    logRetentionDays: () => stores.setting('log_retention_days'),
    flowState: stores.flowState,
    // The registry is SQLite here: the purge gives its free pages back afterwards.
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
  housekeeping.start();
  closers.add(() => housekeeping.stop());
  const scheduler = new Scheduler(scheduledFlows(parts.flows, log), {
    locksDir: paths.locksDir,
    executor: parts.executor,
    log,
    pollMs: intervals.schedulerPollMs,
    leaseMs: intervals.schedulerLeaseMs,
  });
  await scheduler.start();
  closers.add(() => scheduler.stop());
}

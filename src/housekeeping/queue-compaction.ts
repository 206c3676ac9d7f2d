/** Housekeeping: the periodic queue compaction task (hourly by default, `queue_compaction_interval_secs`). */
import type { Logger } from '../common/logger.js';
import type { CompactionPass } from '../queue/index.js';
import { startPeriodicTask, type PeriodicTask } from './periodic-task.js';

export interface QueueCompactionTaskOptions {
  /** One compaction pass over every queue (QueueStore.compact). */
  compact(): Promise<CompactionPass>;
  /** `queue_compaction_interval_secs`, read per cycle. Seconds. @default 3600 (the setting's default) */
  intervalSecs(): number;
  readonly log: Logger;
  /** Run one pass at once as well as on every interval. @default false (the spec runs it hourly, not at startup) */
  readonly runAtStart?: boolean;
}

export function startQueueCompaction(opts: QueueCompactionTaskOptions): PeriodicTask {
  return startPeriodicTask({
    name: 'queue compaction',
    log: opts.log,
    runAtStart: opts.runAtStart,
    intervalMs: () => Math.max(1, opts.intervalSecs()) * 1000,
    run: async () => {
      // On PostgreSQL the pass has nothing to retire (its vacuum gives the space back): no queue, no line.
      const results = (await opts.compact()).queues;
      const changed = results.filter((r) => r.result === 'drained' || r.result === 'deleted' || r.result === 'trimmed');
      if (changed.length > 0)
        opts.log.info({ queues: changed }, `queue compaction: ${changed.length} queue(s) drained, trimmed or removed`);
    },
  });
}

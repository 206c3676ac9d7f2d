/**
 * Housekeeping: the periodic queue compaction task. A small pattern for every interval task:
 * the interval is read at the start of each cycle (a setting change applies from the next one),
 * a cycle never overlaps the previous one, a failing cycle is logged and the timer carries on,
 * and stop() waits for a running cycle.
 */
import type { Logger } from '../common/logger.js';
import type { QueueCompaction } from '../queue/index.js';

export interface QueueCompactionTaskOptions {
  /** One compaction pass over every queue (QueueStore.compact). */
  compact(): Promise<QueueCompaction[]>;
  /** `queue_compaction_interval_secs`, read per cycle. Seconds. @default 3600 (the setting's default) */
  intervalSecs(): number;
  readonly log: Logger;
  /** Run one pass at once as well as on every interval. @default false (the spec runs it hourly, not at startup) */
  readonly runAtStart?: boolean;
}

/** `running` → `stopping` (stop() called, a cycle may be finishing) → `stopped`. */
export type PeriodicTaskState = 'running' | 'stopping' | 'stopped';

export interface PeriodicTask {
  readonly state: PeriodicTaskState;
  /** Cycles completed (failed ones included). */
  readonly cycles: number;
  /** Cancels the next cycle and waits for a running one. Safe to call twice. */
  stop(): Promise<void>;
}

export function startQueueCompaction(opts: QueueCompactionTaskOptions): PeriodicTask {
  let state: PeriodicTaskState = 'running';
  let cycles = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  const cycle = async (): Promise<void> => {
    try {
      const results = await opts.compact();
      const changed = results.filter((r) => r.result === 'drained' || r.result === 'deleted');
      if (changed.length > 0) opts.log.info({ queues: changed }, `queue compaction: ${changed.length} queue(s) drained or removed`);
    } catch (err) {
      opts.log.error({ err }, 'queue compaction failed; next attempt at the next interval');
    } finally {
      cycles++;
    }
  };
  const schedule = (): void => {
    if (state !== 'running') return;
    const secs = Math.max(1, opts.intervalSecs());
    timer = setTimeout(() => {
      current = cycle().finally(() => {
        current = undefined;
        schedule();
      });
    }, secs * 1000);
    timer.unref();
  };
  if (opts.runAtStart) {
    current = cycle().finally(() => {
      current = undefined;
      schedule();
    });
  } else schedule();

  return {
    get state() {
      return state;
    },
    get cycles() {
      return cycles;
    },
    async stop() {
      if (state === 'stopped') return;
      state = 'stopping';
      clearTimeout(timer);
      await current;
      state = 'stopped';
    },
  };
}

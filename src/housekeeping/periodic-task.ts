/**
 * The one pattern of every background interval task: the interval is read before each wait (a
 * setting change applies from the next cycle), a cycle never overlaps the previous one, a failing
 * cycle is logged and the timer carries on, and stop() waits for a running cycle.
 */
import type { Logger } from '../common/logger.js';

export interface PeriodicTaskOptions {
  /** Names the task in the line logged when a cycle fails. */
  readonly name: string;
  /** One cycle. */
  run(): void | Promise<void>;
  /** Wait before the next cycle, read before each wait. Milliseconds (at least 1). */
  intervalMs(): number;
  readonly log: Logger;
  /** Run one cycle at once as well as after every interval. @default false */
  readonly runAtStart?: boolean;
}

/** `running` → `stopping` (stop() called, a cycle may be finishing) → `stopped`. */
export type PeriodicTaskState = 'running' | 'stopping' | 'stopped';

export interface PeriodicTask {
  readonly state: PeriodicTaskState;
  /** Cycles completed (failed ones included). */
  readonly cycles: number;
  /** Runs a cycle now, unless one is running, and counts the next interval from its end. */
  runNow(): void;
  /** Cancels the next cycle and waits for a running one. Safe to call twice. */
  stop(): Promise<void>;
}

export function startPeriodicTask(opts: PeriodicTaskOptions): PeriodicTask {
  let state: PeriodicTaskState = 'running';
  let cycles = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;

  const cycle = async (): Promise<void> => {
    try {
      await opts.run();
    } catch (err) {
      opts.log.error({ err }, `${opts.name} failed; next attempt at the next interval`);
    } finally {
      cycles++;
    }
  };
  const runThenSchedule = (): void => {
    current = cycle().finally(() => {
      current = undefined;
      schedule();
    });
  };
  const schedule = (): void => {
    if (state !== 'running') return;
    timer = setTimeout(runThenSchedule, Math.max(1, opts.intervalMs()));
    timer.unref();
  };
  if (opts.runAtStart) runThenSchedule();
  else schedule();

  return {
    get state() {
      return state;
    },
    get cycles() {
      return cycles;
    },
    runNow() {
      if (state !== 'running' || current !== undefined) return;
      clearTimeout(timer);
      runThenSchedule();
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

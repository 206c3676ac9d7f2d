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
  /**
   * Runs a cycle now, or right after the running one (never two at once); the next interval counts
   * from its end. Nothing once stop() was called.
   */
  runNow(): void;
  /** Cancels the next cycle and waits for a running one. Safe to call twice. */
  stop(): Promise<void>;
}

export function startPeriodicTask(opts: PeriodicTaskOptions): PeriodicTask {
  let state: PeriodicTaskState = 'running';
  let cycles = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  /** runNow() was called during a cycle: another follows it at once. */
  let again = false;

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
      if (again && state === 'running') {
        again = false;
        runThenSchedule();
      } else schedule();
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
      if (state !== 'running') return;
      if (current !== undefined) {
        again = true;
        return;
      }
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

/** startPeriodicTask's runNow(): a cycle at once, or right after the running one, never two at once, nothing after stop(). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../common/logger.js';
import { startPeriodicTask, type PeriodicTask } from './periodic-task.js';

const log = createLogger({ LOG_LEVEL: 'silent' });
/** Far longer than any test: only runAtStart and runNow() start a cycle. */
const NEVER_MS = 3_600_000;

/** A task whose cycles wait for `release()`, recording how many run at once. */
function heldTask(runAtStart: boolean): {
  task: PeriodicTask;
  started: () => number;
  mostAtOnce: () => number;
  release: () => void;
  until: (n: number) => Promise<void>;
} {
  let started = 0;
  let running = 0;
  let mostAtOnce = 0;
  let waiting: (() => void)[] = [];
  const task = startPeriodicTask({
    name: 'held',
    log,
    runAtStart,
    intervalMs: () => NEVER_MS,
    run: () => {
      started++;
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      return new Promise<void>((resolve) => waiting.push(resolve)).then(() => void running--);
    },
  });
  return {
    task,
    started: () => started,
    mostAtOnce: () => mostAtOnce,
    release: () => {
      const now = waiting;
      waiting = [];
      for (const r of now) r();
    },
    until: async (n) => {
      while (task.cycles < n) await new Promise((r) => setImmediate(r));
    },
  };
}

test('runNow() starts a cycle at once, without waiting for the interval', async () => {
  const t = heldTask(false);
  assert.equal(t.started(), 0);
  t.task.runNow();
  assert.equal(t.started(), 1);
  t.release();
  await t.until(1);
  await t.task.stop();
});

test('runNow() during a cycle runs one more right after it, never two at once; repeated calls fold into one', async () => {
  const t = heldTask(true);
  assert.equal(t.started(), 1);
  t.task.runNow();
  t.task.runNow();
  assert.equal(t.started(), 1, 'the running cycle is not overlapped');
  t.release();
  await t.until(1);
  await new Promise((r) => setImmediate(r));
  assert.equal(t.started(), 2, 'the asked-for cycle followed at once');
  t.release();
  await t.until(2);
  await new Promise((r) => setImmediate(r));
  assert.equal(t.started(), 2, 'two calls during one cycle ask for one more cycle, not two');
  assert.equal(t.mostAtOnce(), 1);
  await t.task.stop();
});

test('runNow() after stop() runs nothing, and one asked for during the last cycle is dropped by stop()', async () => {
  const t = heldTask(true);
  t.task.runNow();
  const stopped = t.task.stop();
  t.release();
  await stopped;
  assert.equal(t.task.state, 'stopped');
  t.task.runNow();
  await new Promise((r) => setImmediate(r));
  assert.equal(t.started(), 1);
});

test('a failing cycle is logged and counted, and the task carries on', async () => {
  const lines: string[] = [];
  const spy = { ...log, error: (_o: unknown, msg: string) => void lines.push(msg) } as unknown as typeof log;
  let runs = 0;
  const failing = () => {
    runs++;
    throw new Error('boom');
  };
  const task = startPeriodicTask({
    name: 'flaky',
    run: failing,
    intervalMs: () => NEVER_MS,
    log: spy,
    runAtStart: true,
  });
  await new Promise((r) => setImmediate(r));
  task.runNow();
  await new Promise((r) => setImmediate(r));
  await task.stop();
  assert.equal(runs, 2);
  assert.equal(task.cycles, 2);
  assert.deepEqual(lines, [
    'flaky failed; next attempt at the next interval',
    'flaky failed; next attempt at the next interval',
  ]);
});

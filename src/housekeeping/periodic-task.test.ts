import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../common/logger.js';
import { startPeriodicTask } from './periodic-task.js';

const log = createLogger({ LOG_LEVEL: 'silent' });
/** Long enough that no cycle in these tests comes from the timer: only runAtStart and runNow run one. */
const NEVER_MS = 60_000;

/** A cycle that stays running until `release()`; `runs` counts the cycles begun. */
function gatedRun() {
  let open: () => void = () => {};
  const state = { runs: 0 };
  return {
    state,
    run: () => {
      state.runs++;
      return new Promise<void>((resolve) => (open = resolve));
    },
    release: () => open(),
  };
}

const turn = () => new Promise((r) => setImmediate(r));

test('runAtStart runs one cycle at once; without it, none before the interval', async () => {
  const a = gatedRun();
  const b = gatedRun();
  const withStart = startPeriodicTask({ name: 'a', run: a.run, intervalMs: () => NEVER_MS, log, runAtStart: true });
  const without = startPeriodicTask({ name: 'b', run: b.run, intervalMs: () => NEVER_MS, log });
  assert.equal(a.state.runs, 1);
  assert.equal(b.state.runs, 0);
  a.release();
  await Promise.all([withStart.stop(), without.stop()]);
  assert.equal(withStart.cycles, 1);
});

test('runNow runs a cycle at once, and never a second one over a running cycle', async () => {
  const g = gatedRun();
  const task = startPeriodicTask({ name: 'g', run: g.run, intervalMs: () => NEVER_MS, log });
  task.runNow();
  assert.equal(g.state.runs, 1);
  task.runNow(); // the first is still running
  assert.equal(g.state.runs, 1);
  g.release();
  await turn();
  assert.equal(task.cycles, 1);
  task.runNow(); // idle again: runs
  assert.equal(g.state.runs, 2);
  g.release();
  await task.stop();
  assert.equal(task.cycles, 2);
});

test('a failing cycle is logged and counted, and the task carries on', async () => {
  const lines: string[] = [];
  const spy = { ...log, error: (_o: unknown, msg: string) => void lines.push(msg) } as unknown as typeof log;
  let runs = 0;
  const task = startPeriodicTask({ name: 'flaky', run: () => { runs++; throw new Error('boom'); }, intervalMs: () => NEVER_MS, log: spy, runAtStart: true });
  await turn();
  task.runNow();
  await turn();
  await task.stop();
  assert.equal(runs, 2);
  assert.equal(task.cycles, 2);
  assert.deepEqual(lines, ['flaky failed; next attempt at the next interval', 'flaky failed; next attempt at the next interval']);
});

test('stop waits for the running cycle, and runNow after stop does nothing', async () => {
  const g = gatedRun();
  const task = startPeriodicTask({ name: 'g', run: g.run, intervalMs: () => NEVER_MS, log, runAtStart: true });
  const stopped = task.stop();
  assert.equal(task.state, 'stopping');
  g.release();
  await stopped;
  assert.equal(task.state, 'stopped');
  task.runNow();
  assert.equal(g.state.runs, 1);
});

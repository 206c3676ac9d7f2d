/** The flow-state purge: dedup rows past their own window, finished correlations past retention. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Correlations } from '../../../src/app/runtime/correlation.js';
import { Dedup } from '../../../src/app/runtime/dedup.js';
import type { RunMeta } from '../../../src/app/runtime/run-meta.js';
import type { FlowResult } from '../../../src/engine/index.js';
import type { FlowIR } from '../../../src/ir/types.js';
import { openDb } from '../../../src/store/sqlite/db.js';
import { SqliteFlowStateStore } from '../../../src/store/sqlite/sqlite-flow-state-store.js';
import { registryMigrations } from '../../../src/store/sqlite/migrations/registry.js';
import type { ReclaimOptions } from '../../../src/store/sqlite/auto-vacuum.js';
import { promising } from '../../helpers/promising-store.js';
import { runFlowStatePurge } from '../../../src/housekeeping/flow-state-purge.js';

const HOUR = 3_600_000;
const ir = { tenant: 't', flow: 'f', steps: [{ name: 's' }] } as unknown as FlowIR;
const meta: RunMeta = { door: 'http', correlationId: 'c1', headers: {} };
const ok = (): Promise<FlowResult> =>
  Promise.resolve({ status: 200, headers: {}, output: { n: 1 }, filtered: false, faultHandled: false });

function setup(now: { t: number }) {
  const repo = new SqliteFlowStateStore(openDb(':memory:', registryMigrations));
  const dedup = new Dedup(repo, { defaultWindowHours: 1, leaseMs: 60_000, stateKey: undefined, now: () => now.t });
  return { repo, dedup };
}

test('the purge deletes dedup rows past their own expires_at and finished correlations past retention', async () => {
  const now = { t: Date.now() };
  const { repo, dedup } = setup(now);
  await dedup.around(
    ir,
    { key: 'ctx.input.id', windowHours: 0.5, memoizeResponse: false, onFailure: 'rerun' },
    { id: 'a' },
    meta,
    ok,
  );
  await dedup.around(ir, { key: 'ctx.input.id', memoizeResponse: false, onFailure: 'rerun' }, { id: 'b' }, meta, ok);
  let clock = now.t - 10 * HOUR;
  const c = new Correlations(repo, { stateKey: undefined, now: () => clock });
  await c.around(ir, { kind: 'open', key: 'ctx.input.id', deadlineSecs: 1 }, { id: 'old' }, meta, ok);
  clock = now.t;
  await c.reconcile(undefined, () => undefined);
  assert.equal(repo.listCorrelations({ statuses: ['timed_out'] }).length, 1);
  const r = await runFlowStatePurge(repo, 4, { now: now.t + 0.75 * HOUR });
  assert.deepEqual(r, { inboxDeleted: 1, correlationsDeleted: 1, pagesFreed: 0 });
  assert.equal((await runFlowStatePurge(repo, 96, { now: now.t })).correlationsDeleted, 0);
});

test('the purge awaits a store that answers with promises and vacuums only when given a reclaim step', async () => {
  const now = { t: Date.now() };
  const { repo, dedup } = setup(now);
  await dedup.around(
    ir,
    { key: 'ctx.input.id', windowHours: 0.5, memoizeResponse: false, onFailure: 'rerun' },
    { id: 'a' },
    meta,
    ok,
  );
  const store = promising(repo);
  const reclaims: boolean[] = [];
  const reclaim = async (opts: ReclaimOptions) => {
    reclaims.push(await opts.between());
    return { pagesFreed: 3, slices: 1, longestSliceMs: 0, stopped: false };
  };
  assert.deepEqual(await runFlowStatePurge(store, 4, { now: now.t }), {
    inboxDeleted: 0,
    correlationsDeleted: 0,
    pagesFreed: 0,
  });
  assert.deepEqual(await runFlowStatePurge(store, 4, { now: now.t + HOUR, reclaim }), {
    inboxDeleted: 1,
    correlationsDeleted: 0,
    pagesFreed: 3,
  });
  assert.deepEqual(reclaims, [true]);
  assert.equal(
    (await runFlowStatePurge(store, 4, { now: now.t + HOUR, reclaim, stopping: () => true })).pagesFreed,
    0,
    'no vacuum once stopping',
  );
  assert.deepEqual(reclaims, [true]);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StorageUnavailableError, SvcError } from '../../../../src/common/errors.js';
import type { FlowResult } from '../../../../src/engine/index.js';
import type { FlowIR } from '../../../../src/ir/types.js';
import { openDb } from '../../../../src/store/sqlite/db.js';
import { SqliteFlowStateStore } from '../../../../src/store/sqlite/sqlite-flow-state-store.js';
import { registryMigrations } from '../../../../src/store/sqlite/migrations/registry.js';
import type { RunMeta } from '../../../../src/app/runtime/run-meta.js';
import { keyFingerprint } from '../../../../src/app/runtime/dedup-fingerprint.js';
import { Dedup } from '../../../../src/app/runtime/dedup.js';
import { Correlations } from '../../../../src/app/runtime/correlation.js';
import { scheduleProblem } from '../../../../src/app/runtime/scheduler.js';
import { promising } from '../../../helpers/promising-store.js';

const ir = { tenant: 't', flow: 'f', steps: [{ name: 's' }] } as unknown as FlowIR;
const meta: RunMeta = { door: 'http', correlationId: 'c1', headers: {} };
const ok = (): Promise<FlowResult> =>
  Promise.resolve({ status: 200, headers: {}, output: { n: 1 }, filtered: false, faultHandled: false });

function setup(now: { t: number }) {
  const db = openDb(':memory:', registryMigrations);
  const repo = new SqliteFlowStateStore(db);
  const dedup = new Dedup(repo, { defaultWindowHours: 1, leaseMs: 60_000, stateKey: undefined, now: () => now.t });
  return { db, repo, dedup };
}

test('fingerprints are HMAC with the state key and plain SHA-256 without it, and never contain the key', () => {
  const plain = keyFingerprint('t', 'f', 'secret-key', undefined);
  const keyed = keyFingerprint('t', 'f', 'secret-key', 'k');
  assert.match(plain, /^[0-9a-f]{64}$/);
  assert.notEqual(plain, keyed);
  assert.notEqual(keyFingerprint('t', 'f2', 'secret-key', undefined), plain);
});

test('a claim holds until the lease expires, then a delivery re-claims the key', async () => {
  const now = { t: Date.parse('2030-01-01T00:00:00Z') };
  const { repo, dedup } = setup(now);
  const d = { key: 'ctx.input.id', memoizeResponse: true, onFailure: 'rerun' as const };
  let release!: () => void;
  const first = dedup.around(
    ir,
    d,
    { id: 'a' },
    meta,
    () =>
      new Promise(
        (r) => (release = () => r({ status: 200, headers: {}, output: 'x', filtered: false, faultHandled: false })),
      ),
  );
  await assert.rejects(dedup.around(ir, d, { id: 'a' }, { ...meta, correlationId: 'c2' }, ok), { status: 409 });
  now.t += 61_000;
  const second = await dedup.around(ir, d, { id: 'a' }, { ...meta, correlationId: 'c3' }, ok);
  assert.deepEqual(second.output, { n: 1 });
  release();
  await first; // the stale claim's late outcome does not overwrite the new one
  const row = repo.getInbox('t', 'f', keyFingerprint('t', 'f', 'a', undefined))!;
  assert.equal(row.first_correlation_id, 'c3');
  assert.equal(row.status, 'done');
});

test('the reconcile pass enqueues the compensating flow with the recorded state once', async () => {
  const now = { t: Date.now() };
  const { repo } = setup(now);
  const c = new Correlations(repo, { stateKey: undefined, now: () => now.t });
  await c.around(
    ir,
    { kind: 'open', key: 'ctx.input.id', deadlineSecs: 5, onTimeout: 'comp', state: { amount: 'ctx.input.amount' } },
    { id: 'k', amount: 7 },
    meta,
    ok,
  );
  const sent: unknown[] = [];
  const enqueue = async (tenant: string, flow: string, m: unknown) => void sent.push({ tenant, flow, m });
  assert.equal((await c.reconcile(enqueue, () => undefined)).length, 0);
  now.t += 6000;
  assert.equal((await c.reconcile(enqueue, () => undefined)).length, 1);
  assert.equal((await c.reconcile(enqueue, () => undefined)).length, 0);
  assert.deepEqual(sent, [{ tenant: 't', flow: 'comp', m: { correlationId: 'c1', payload: { amount: 7 } } }]);
});

test('a correlation_state nesting deeper than a queued message may is refused (422) before the row is opened; the key stays free', async () => {
  const { repo } = setup({ t: Date.now() });
  const c = new Correlations(repo, { stateKey: undefined });
  let deep: unknown = 1;
  for (let i = 0; i < 127; i++) deep = [deep];
  const decl = {
    kind: 'open' as const,
    key: 'ctx.input.id',
    deadlineSecs: 5,
    onTimeout: 'comp',
    state: { kept: 'ctx.input.deep' },
  };
  // The state is an object around the value: one level more than the value itself.
  await assert.rejects(c.around(ir, decl, { id: 'k', deep: [deep] }, meta, ok), (err: unknown) => {
    assert.ok(err instanceof SvcError);
    assert.equal(err.status, 422);
    assert.equal(err.message, 'correlation refused: correlation_state nests deeper than 128 levels');
    return true;
  });
  const opened = await c.around(ir, decl, { id: 'k', deep }, meta, ok);
  assert.equal(opened.status, 200, 'the same key opens with a state at the limit');
});

test('a state store failure is StorageUnavailableError (503)', async () => {
  const { db, dedup } = setup({ t: Date.now() });
  db.close();
  await assert.rejects(
    dedup.around(ir, { key: 'ctx.input.id', memoizeResponse: false, onFailure: 'rerun' }, { id: 'a' }, meta, ok),
    (err) => {
      assert.ok(err instanceof StorageUnavailableError);
      assert.equal(err.status, 503);
      return true;
    },
  );
});

test('dedup and correlation run the same on a store that answers with promises, as PostgreSQL does', async () => {
  const now = { t: Date.parse('2030-01-01T00:00:00Z') };
  const repo = new SqliteFlowStateStore(openDb(':memory:', registryMigrations));
  const store = promising(repo);
  const dedup = new Dedup(store, { defaultWindowHours: 1, leaseMs: 60_000, stateKey: undefined, now: () => now.t });
  const d = { key: 'ctx.input.id', memoizeResponse: true, onFailure: 'rerun' as const };
  let release!: () => void;
  const first = dedup.around(
    ir,
    d,
    { id: 'a' },
    meta,
    () =>
      new Promise(
        (r) =>
          (release = () => r({ status: 201, headers: { h: 'v' }, output: 'x', filtered: false, faultHandled: false })),
      ),
  );
  await assert.rejects(dedup.around(ir, d, { id: 'a' }, { ...meta, correlationId: 'c2' }, ok), { status: 409 });
  release();
  assert.equal((await first).status, 201);
  const replay = await dedup.around(ir, d, { id: 'a' }, { ...meta, correlationId: 'c3' }, ok);
  assert.deepEqual([replay.status, replay.output, replay.headers['x-svc-idempotent-replay']], [201, 'x', 'true']);

  const c = new Correlations(store, { stateKey: undefined, now: () => now.t });
  const open = {
    kind: 'open' as const,
    key: 'ctx.input.id',
    deadlineSecs: 5,
    onTimeout: 'comp',
    state: { n: 'ctx.input.n' },
  };
  await c.around(ir, open, { id: 'k', n: 1 }, meta, ok);
  await assert.rejects(c.around(ir, open, { id: 'k', n: 2 }, meta, ok), { status: 409 });
  const failing = (): Promise<FlowResult> => Promise.reject(new Error('boom'));
  await assert.rejects(c.around(ir, open, { id: 'w', n: 3 }, meta, failing), /boom/);
  assert.equal(
    repo.getCorrelation('t', 'f', keyFingerprint('t', 'f', 'w', undefined)),
    undefined,
    'a failed opening withdraws its row',
  );
  now.t += 6000;
  const sent: unknown[] = [];
  const timedOut = await c.reconcile(
    async (_t, flow, m) => void sent.push({ flow, m }),
    () => undefined,
  );
  assert.deepEqual([timedOut.length, sent], [1, [{ flow: 'comp', m: { correlationId: 'c1', payload: { n: 1 } } }]]);
  await c.around(ir, { kind: 'close', key: 'ctx.input.id', closes: 'f' }, { id: 'k' }, meta, ok);
  assert.equal(repo.getCorrelation('t', 'f', keyFingerprint('t', 'f', 'k', undefined))?.status, 'closed_late');
});

test('a state store failure answered as a rejection is still StorageUnavailableError (503)', async () => {
  const db = openDb(':memory:', registryMigrations);
  const dedup = new Dedup(promising(new SqliteFlowStateStore(db)), {
    defaultWindowHours: 1,
    leaseMs: 60_000,
    stateKey: undefined,
  });
  db.close();
  await assert.rejects(
    dedup.around(ir, { key: 'ctx.input.id', memoizeResponse: false, onFailure: 'rerun' }, { id: 'a' }, meta, ok),
    (err) => {
      assert.ok(err instanceof StorageUnavailableError);
      assert.equal(err.status, 503);
      return true;
    },
  );
});

test('schedules are checked with clear reasons', () => {
  assert.equal(scheduleProblem('*/1 * * * * *'), undefined);
  assert.match(scheduleProblem('* * * * *')!, /5 fields/);
  assert.match(scheduleProblem('@hourly')!, /1 field/);
  assert.match(scheduleProblem('99 * * * * *')!, /not a valid cron/);
});

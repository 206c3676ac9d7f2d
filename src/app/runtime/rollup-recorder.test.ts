// The rollups counted in memory: one row per minute and key, failures by outcome, latencies in
// their buckets, a drain that starts afresh; and the engine's step timer telling each step's run,
// a called flow's steps under that flow, a step that threw as failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileFlow } from '../../flow/compile.js';
import { runFlow } from '../../engine/index.js';
import type { FlowIR } from '../../ir/types.js';
import { latencyBucket, latencyQuantile } from '../../store/contracts/index.js';
import { deliveryFailed, RollupRecorder } from './rollup-recorder.js';
import type { ExecutionOutcome } from './execution-observer.js';

const MINUTE = 60_000;

test('a delivery failed unless it succeeded or a condition filtered it', () => {
  const cases: Array<readonly [ExecutionOutcome, boolean]> = [
    ['succeeded', false],
    ['filtered', false],
    ['fault_handled', true],
    ['failed', true],
    ['busy', true],
  ];
  for (const [outcome, failed] of cases) assert.equal(deliveryFailed(outcome), failed, outcome);
});

test('one row per minute, tenant, flow and door or step; counts, failures, time and buckets add up', () => {
  let now = 7 * MINUTE + 59_000;
  const r = new RollupRecorder(() => now);
  r.executed('acme', 'orders', 'http', 'succeeded', 0.004);
  r.executed('acme', 'orders', 'http', 'failed', 0.3);
  r.executed('acme', 'orders', 'queue', 'succeeded', 0.02);
  r.stepRan({ tenant: 'acme', flow: 'orders' } as FlowIR, 'check', 0.5, false);
  now += 1_000; // the next minute
  r.executed('acme', 'orders', 'http', 'succeeded', 0.004);
  const rows = r.drain();
  const line = (x: (typeof rows)[number]) => `${x.minute} ${x.door || '-'} ${x.step || '-'} ${x.count} ${x.failures}`;
  const flowRows = rows.filter((x) => x.flow === 'orders');
  assert.deepEqual(flowRows.map(line), ['7 http - 2 1', '7 queue - 1 0', '7 - check 1 0', '8 http - 1 0']);
  // Each delivery also counts in the all-flows row of its door (tenant and flow ''); steps do not.
  const all = rows.filter((x) => x.tenant === '' && x.flow === '');
  assert.deepEqual(all.map(line), ['7 http - 2 1', '7 queue - 1 0', '8 http - 1 0']);
  assert.equal(flowRows[0]!.sumMs, 304);
  assert.equal(flowRows[0]!.buckets[latencyBucket(4)], 1);
  assert.equal(flowRows[0]!.buckets[latencyBucket(300)], 1);
  assert.deepEqual(r.drain(), [], 'a drain starts afresh');
});

test('latencyQuantile: inside the bucket the rank falls in; null when empty; the open last bucket its lower bound', () => {
  const buckets = (entries: Record<number, number>) => {
    const b = new Array<number>(15).fill(0);
    for (const [ms, n] of Object.entries(entries)) b[latencyBucket(Number(ms))] += n;
    return b;
  };
  assert.equal(latencyQuantile(buckets({}), 0.95), null);
  // 100 runs of 1 ms or less: the p95 is 0.95 ms into the first bucket [0, 1].
  assert.equal(latencyQuantile(buckets({ 1: 100 }), 0.95), 0.95);
  // 90 fast, 10 between 100 and 250 ms: the 95th is halfway through that bucket.
  assert.equal(latencyQuantile(buckets({ 1: 90, 200: 10 }), 0.95), 175);
  assert.equal(latencyQuantile(buckets({ 60_000: 3 }), 0.5), 30_000);
});

test("the engine's step timer: each step's run, a called flow's steps under that flow, a step that threw as failed", async () => {
  const compile = (text: string): FlowIR => {
    const r = compileFlow(text, { file: 'x.flow.md' });
    assert.deepEqual(r.diagnostics, []);
    return r.ir!;
  };
  const head = (name: string) => `---\nflowdoc_version: "0.1"\nflow: ${name}\ntenant: acme\n---\n`;
  const callee = compile(`${head('callee')}\n## Step: inner\n\`\`\`ntd\n{"v": 1}\n\`\`\`\n`);
  const caller = compile(
    `${head('caller')}\n## Step: first\n\`\`\`validate\nctx.input.n > 0 | n must be positive | semantic\n\`\`\`\n\n## Step: call\ncall_flow: callee\n`,
  );
  const told: string[] = [];
  const deps = {
    loadFlow: (_t: string, name: string) =>
      name === 'callee' ? { ir: callee, hash: 'h', version: '1', created_at: '2026-01-01T00:00:00Z' } : undefined,
    stepTimer: (ir: FlowIR, step: string, ms: number, failed: boolean) => {
      assert.ok(ms >= 0);
      told.push(`${ir.flow}:${step}${failed ? ' failed' : ''}`);
    },
  };
  await runFlow(caller, { n: 1 }, { correlationId: 'c1' }, deps);
  assert.deepEqual(told, ['caller:first', 'callee:inner', 'caller:call']);
  told.length = 0;
  await assert.rejects(runFlow(caller, { n: 0 }, { correlationId: 'c2' }, deps));
  assert.deepEqual(told, ['caller:first failed']);
});

test('no count is lost when the clock moves on, or back, between drains', () => {
  let now = 7 * MINUTE;
  const r = new RollupRecorder(() => now);
  const minutes = [7, 8, 8, 7, 9, 9, 9]; // the clock stepped back once (an NTP correction)
  for (const m of minutes) {
    now = m * MINUTE + 30_000;
    r.executed('acme', 'orders', 'http', 'succeeded', 0.001);
    r.stepRan({ tenant: 'acme', flow: 'orders' } as FlowIR, 'check', 0.5, false);
  }
  const rows = r.drain();
  // What the store holds after adding each row to its key.
  const held = new Map<string, number>();
  for (const x of rows) {
    const key = `${x.minute} ${x.tenant || '*'} ${x.door || '-'} ${x.step || '-'}`;
    held.set(key, (held.get(key) ?? 0) + x.count);
  }
  assert.deepEqual(Object.fromEntries(held), {
    '7 acme http -': 2,
    '7 acme - check': 2,
    '7 * http -': 2,
    '8 acme http -': 2,
    '8 acme - check': 2,
    '8 * http -': 2,
    '9 acme http -': 3,
    '9 acme - check': 3,
    '9 * http -': 3,
  });
  now = 10 * MINUTE;
  assert.deepEqual(r.drain(), [], 'a drain starts afresh');
});

test('deliveries of flows told in turn, and a flow of the same name in another tenant, each count in their own rows', () => {
  let now = 3 * MINUTE;
  const r = new RollupRecorder(() => now);
  const told: Array<readonly [string, string]> = [
    ['acme', 'orders'],
    ['acme', 'refunds'],
    ['globex', 'orders'],
    ['acme', 'orders'],
    ['acme', 'orders'],
    ['globex', 'orders'],
  ];
  for (const [tenant, flow] of told) {
    r.stepRan({ tenant, flow } as FlowIR, 'check', 0.5, false);
    r.executed(tenant, flow, 'http', 'succeeded', 0.001);
  }
  const line = (x: { minute: number; tenant: string; flow: string; door: string; step: string; count: number }) =>
    `${x.minute} ${x.tenant}/${x.flow} ${x.door || x.step} ${x.count}`;
  assert.deepEqual(r.drain().map(line).sort(), [
    '3 / http 6',
    '3 acme/orders check 3',
    '3 acme/orders http 3',
    '3 acme/refunds check 1',
    '3 acme/refunds http 1',
    '3 globex/orders check 2',
    '3 globex/orders http 2',
  ]);
  // After a drain, the same flow again.
  r.executed('acme', 'orders', 'http', 'failed', 0.001);
  now += MINUTE;
  r.executed('acme', 'orders', 'http', 'succeeded', 0.001);
  const rows = r.drain().filter((x) => x.tenant !== '');
  assert.deepEqual(
    rows.map((x) => `${x.minute} ${x.tenant}/${x.flow} ${x.door || x.step} ${x.count} ${x.failures}`),
    ['3 acme/orders http 1 1', '4 acme/orders http 1 0'],
  );
});

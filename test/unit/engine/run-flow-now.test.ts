import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowTimeoutError, ValidationRejectedError, errorBody } from '../../../src/common/errors.js';
import { runFlow, runFlowNow } from '../../../src/engine/run-flow.js';
import { flow, step } from '../../helpers/engine-fixtures.js';
import type { FlowResult, RunDeps } from '../../../src/engine/types.js';

const opts = { correlationId: 'cid-now' };

const check = step('check', {
  validate: [{ expr: 'has(ctx.input.id)', message: 'id is required', kind: 'syntactic', line: 3 }],
});
const answer = step('answer', { ntd: { format: 'json', body: '{"id": "{{ ctx.input.id }}", "ok": true}' } });
/** A flow of steps that never wait: validate, then an ntd answer (the /run bench's shape). */
const syncFlow = flow('f', [check, answer]);
const publish = step('publish', { effects: ['queue_publish'] });
const effects: RunDeps = { effects: { queue_publish: (c) => ({ output: c.message }) } };

async function settled(r: unknown): Promise<{ value?: unknown; error?: unknown }> {
  try {
    return { value: await r };
  } catch (error) {
    return { error };
  }
}

test('a flow whose steps never wait gives its result at once, not a promise', () => {
  const r = runFlowNow(syncFlow, { id: 'o-1' }, opts);
  assert.ok(!(r instanceof Promise), 'a FlowResult, not a promise');
  assert.deepEqual(r, {
    status: 200,
    headers: {},
    output: { id: 'o-1', ok: true },
    filtered: false,
    faultHandled: false,
  });
});

test('a flow with a step that waits gives a promise of the same result runFlow gives', async () => {
  const ir = flow('f', [check, publish, answer]);
  const r = runFlowNow(ir, { id: 'o-2' }, opts, effects);
  assert.ok(r instanceof Promise);
  assert.deepEqual(await r, await runFlow(ir, { id: 'o-2' }, opts, effects));
});

test('a failure of a flow that never waits comes as a rejected promise, never thrown from the call', async () => {
  let r: unknown;
  assert.doesNotThrow(() => (r = runFlowNow(syncFlow, {}, opts)));
  assert.ok(r instanceof Promise);
  const { error } = await settled(r);
  assert.ok(error instanceof ValidationRejectedError);
  assert.deepEqual(errorBody(error), { error: 'id is required', step: 'check' });
});

test('a flow that cannot even start (an unknown function) is refused through the promise too', async () => {
  const broken = flow('f', [step('bad', { ntd: { format: 'text', body: '{{ nosuch(1) }}' } })]);
  let r: unknown;
  assert.doesNotThrow(() => (r = runFlowNow(broken, {}, opts)));
  assert.ok(r instanceof Promise);
  const a = await settled(r);
  const b = await settled(runFlow(broken, {}, opts));
  assert.ok(a.error !== undefined);
  assert.equal((a.error as Error).constructor, (b.error as Error).constructor);
  assert.equal((a.error as Error).message, (b.error as Error).message);
});

test('the fault handler answers a failure of a flow that never waits, as it does for runFlow', async () => {
  const faulted = flow('f', [check, answer], {
    fault: {
      name: 'h',
      line: 20,
      steps: [step('h', { ntd: { format: 'json', body: '{"failed": "{{ ctx.input.fault_step }}"}' } })],
    },
  });
  const now = await runFlowNow(faulted, {}, opts);
  const later = await runFlow(faulted, {}, opts);
  assert.equal(now.faultHandled, true);
  assert.deepEqual(now.output, { failed: 'check' });
  assert.deepEqual({ ...now, handledError: undefined }, { ...later, handledError: undefined });
});

test('the time limit is still checked between steps that never wait', async () => {
  let t = 0;
  // Each evaluation of the clock after the start moves it on: the second step starts past the limit.
  const deps: RunDeps = { now: () => (t += 2500) };
  const r = runFlowNow(syncFlow, { id: 'x' }, { ...opts, maxDurationSecs: 2 }, deps);
  const { error } = await settled(r);
  assert.ok(error instanceof FlowTimeoutError, String(error));
  assert.deepEqual(errorBody(error), { error: 'flow exceeded its maximum duration', step: 'answer', limit_secs: 2 });
});

test('every step is timed once, whether the sequence stayed synchronous or went on asynchronously', async () => {
  for (const ir of [syncFlow, flow('f', [check, publish, answer])]) {
    const timed: [string, boolean][] = [];
    const deps: RunDeps = { ...effects, stepTimer: (_ir, name, _ms, failed) => timed.push([name, failed]) };
    const r: FlowResult = await runFlowNow(ir, { id: 'o' }, opts, deps);
    assert.equal(r.status, 200);
    assert.deepEqual(
      timed,
      ir.steps.map((s) => [s.name, false]),
    );
  }
  const timed: [string, boolean][] = [];
  await settled(runFlowNow(syncFlow, {}, opts, { stepTimer: (_ir, name, _ms, failed) => timed.push([name, failed]) }));
  assert.deepEqual(timed, [['check', true]]);
});

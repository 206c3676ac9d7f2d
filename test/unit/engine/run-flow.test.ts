import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EgressError,
  FaultHandlerFailedError,
  FlowDefectError,
  FlowTimeoutError,
  IntegrityError,
  ValidationRejectedError,
  errorBody,
} from '../../../src/common/errors.js';
import { XmlValue } from '../../../src/common/xml-value.js';
import { runFlow } from '../../../src/engine/run-flow.js';
import { prepareFlow } from '../../../src/engine/prepare.js';
import { flow, memoryEvents, step } from '../../helpers/engine-fixtures.js';
import type { EffectHandler, LoadedFlow, RunDeps } from '../../../src/engine/types.js';
import type { FlowIR } from '../../../src/ir/types.js';

const opts = { correlationId: 'cid-1' };

test('a flow without steps answers 200 with its input', async () => {
  const r = await runFlow(flow('f', []), { a: 1 }, opts);
  assert.deepEqual(r, { status: 200, headers: {}, output: { a: 1 }, filtered: false, faultHandled: false });
});

test('steps run in file order and the last output is the flow output', async () => {
  const ir = flow('f', [
    step('one', { ntd: { format: 'json', body: '{"n": {{ ctx.input.n + 1 }}}' } }),
    step('two', { ntd: { format: 'json', body: '{"n": {{ ctx.input.n * 10 }}}' } }),
  ]);
  const r = await runFlow(ir, { n: 1 }, opts);
  assert.deepEqual(r.output, { n: 20 });
});

test('an xml ntd gives an XmlValue and a text ntd a string', async () => {
  const x = await runFlow(
    flow('f', [step('s', { ntd: { format: 'xml', body: '<r>{{ ctx.input.id }}</r>' } })]),
    { id: 'a&b' },
    opts,
  );
  assert.ok(x.output instanceof XmlValue);
  assert.equal((x.output as XmlValue).xml, '<r>a&amp;b</r>');
  const t = await runFlow(
    flow('f', [step('s', { ntd: { format: 'text', body: 'hi {{ ctx.input.id }}' } })]),
    { id: 'x' },
    opts,
  );
  assert.equal(t.output, 'hi x');
});

test('a false syntactic rule stops the flow with 400 and names the step', async () => {
  const ir = flow('f', [
    step('check', {
      validate: [
        { expr: 'has(ctx.input.id)', message: 'id is required', kind: 'syntactic', line: 3 },
        { expr: 'ctx.input.amount > 0', message: 'amount must be positive', kind: 'semantic', line: 4 },
      ],
    }),
    step('never', { ntd: { format: 'text', body: 'reached' } }),
  ]);
  const err = await runFlow(ir, { amount: 1 }, opts).then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ValidationRejectedError);
  assert.equal(err.status, 400);
  assert.deepEqual(errorBody(err), { error: 'id is required', step: 'check' });
});

test('a false semantic rule answers 422 with the rule message', async () => {
  const ir = flow('f', [
    step('check', {
      validate: [{ expr: 'ctx.input.amount > 0', message: 'amount must be positive', kind: 'semantic', line: 4 }],
    }),
  ]);
  await assert.rejects(runFlow(ir, { amount: 0 }, opts), (e: unknown) => {
    assert.ok(e instanceof ValidationRejectedError);
    assert.equal(e.status, 422);
    assert.deepEqual(errorBody(e), { error: 'amount must be positive', step: 'check' });
    return true;
  });
});

test('an expression that fails at run time is a defect: 500 flow execution failed', async () => {
  const ir = flow('f', [step('s', { ntd: { format: 'json', body: '{"x": {{ ctx.input.missing.deep }}}' } })]);
  await assert.rejects(runFlow(ir, {}, opts), (e: unknown) => {
    assert.ok(e instanceof FlowDefectError);
    assert.equal(e.status, 500);
    assert.equal(e.step, 's');
    assert.deepEqual(errorBody(e), { ok: false, error: 'flow execution failed' });
    return true;
  });
});

test('a validate rule giving a non-bool is a defect', async () => {
  const ir = flow('f', [step('s', { validate: [{ expr: 'ctx.input.n', message: 'm', kind: 'syntactic', line: 1 }] })]);
  await assert.rejects(runFlow(ir, { n: 3 }, opts), FlowDefectError);
});

test('a false condition on /run ends the flow with the current input as output', async () => {
  const ir = flow('f', [
    step('a', { ntd: { format: 'json', body: '{"v": 1}' } }),
    step('gate', { condition: 'ctx.input.v == 2', ntd: { format: 'text', body: 'no' } }),
    step('after', { ntd: { format: 'text', body: 'no' } }),
  ]);
  const r = await runFlow(ir, {}, opts);
  assert.deepEqual(r.output, { v: 1 });
  assert.equal(r.status, 200);
  assert.equal(r.filtered, false);
});

test('a false condition on a queue delivery reports filtered', async () => {
  const ir = flow('f', [step('gate', { condition: 'false' })]);
  const r = await runFlow(ir, { m: 1 }, { ...opts, delivery: 'queue' });
  assert.equal(r.filtered, true);
  const pass = await runFlow(
    flow('f', [step('gate', { condition: 'true' })]),
    { m: 1 },
    { ...opts, delivery: 'queue' },
  );
  assert.equal(pass.filtered, false);
});

test('response_status, response headers and set_ctx apply after the step', async () => {
  const ir = flow('f', [
    step('a', {
      responseStatus: '201',
      responseHeaders: { 'x-correlation-id': '{{ ctx.correlation_id }}' },
      setCtx: { seen: '{{ ctx.input.id }}' },
    }),
    step('b', { ntd: { format: 'json', body: '{"seen": "{{ ctx.seen }}"}' }, responseStatus: '{{ 200 + 2 }}' }),
  ]);
  const r = await runFlow(ir, { id: 'q' }, opts);
  assert.equal(r.status, 202);
  assert.deepEqual(r.headers, { 'x-correlation-id': 'cid-1' });
  assert.deepEqual(r.output, { seen: 'q' });
});

test('a response header value with a line break is a defect naming the step, not a broken response', async () => {
  const ir = flow('f', [step('a', { responseHeaders: { 'x-echo': '{{ ctx.input.v }}' } })]);
  await assert.rejects(
    runFlow(ir, { v: 'a\r\nset-cookie: x=1' }, opts),
    (e: unknown) => e instanceof FlowDefectError && /step 'a': response_header x-echo/.test(e.detail),
  );
  assert.deepEqual((await runFlow(ir, { v: 'plain é' }, opts)).headers, { 'x-echo': 'plain é' });
});

test('a response_status outside 100-599 is a defect', async () => {
  await assert.rejects(runFlow(flow('f', [step('a', { responseStatus: '{{ 42 }}' })]), {}, opts), FlowDefectError);
});

test('restore_body brings back a snapshot taken by an earlier step', async () => {
  const ir = flow('f', [
    step('keep', { snapshot: 'orig', ntd: { format: 'text', body: 'changed' } }),
    step('back', { restoreBody: 'orig' }),
  ]);
  assert.deepEqual((await runFlow(ir, { o: 1 }, opts)).output, { o: 1 });
  await assert.rejects(runFlow(flow('f', [step('back', { restoreBody: 'nope' })]), {}, opts), FlowDefectError);
});

test('the context holds correlation id, headers, config and soap values', async () => {
  const ir = flow(
    'f',
    [
      step('a', {
        ntd: {
          format: 'json',
          body: '{"c": "{{ ctx.correlation_id }}", "h": "{{ ctx.headers[\'x-a\'] }}", "k": "{{ ctx.region }}", "s": "{{ ctx.soap_action }}"}',
        },
      }),
    ],
    {
      config: ['region'],
    },
  );
  const r = await runFlow(
    ir,
    {},
    { correlationId: 'z', headers: { 'x-a': 'b' }, config: { region: 'eu' }, soap: { action: 'Do', version: '1.1' } },
  );
  assert.deepEqual(r.output, { c: 'z', h: 'b', k: 'eu', s: 'Do' });
});

test('config falls back to SVC_CONFIG_<KEY> from the environment', async () => {
  const ir = flow('f', [step('a', { ntd: { format: 'text', body: '{{ ctx.base_url }}' } })], { config: ['base_url'] });
  const r = await runFlow(ir, {}, opts, { env: { SVC_CONFIG_BASE_URL: 'http://x' } });
  assert.equal(r.output, 'http://x');
});

// ---- effects

test('secret_read puts SVC_SECRET_<KEY> in ctx.<key>, re-read on every execution, message passes through', async () => {
  const ir = flow('f', [
    step('api-key', { effects: ['secret_read'] }),
    step('use', { ntd: { format: 'json', body: '{"k": "{{ ctx.api_key }}", "in": {{ ctx.input }}}' } }),
  ]);
  const env: NodeJS.ProcessEnv = { SVC_SECRET_API_KEY: 'one' };
  assert.deepEqual((await runFlow(ir, { a: 1 }, opts, { env })).output, { k: 'one', in: { a: 1 } });
  env.SVC_SECRET_API_KEY = 'two';
  assert.deepEqual((await runFlow(ir, { a: 1 }, opts, { env })).output, { k: 'two', in: { a: 1 } });
});

test('secret_read honours an explicit key and fails with 502 when the variable is unset', async () => {
  const ir = flow('f', [
    step('s', { effects: ['secret_read'], secretKey: 'token_x' }),
    step('u', { ntd: { format: 'text', body: '{{ ctx.token_x }}' } }),
  ]);
  assert.equal((await runFlow(ir, {}, opts, { env: { SVC_SECRET_TOKEN_X: '' } })).output, '');
  await assert.rejects(
    runFlow(ir, {}, opts, { env: {} }),
    (e: unknown) => e instanceof EgressError && e.status === 502,
  );
});

test('a step whose effect has no handler fails with a clear defect', async () => {
  const ir = flow('f', [step('call', { effects: ['http_egress'] })]);
  await assert.rejects(runFlow(ir, {}, opts), (e: unknown) => {
    assert.ok(e instanceof FlowDefectError);
    assert.match(e.detail, /http_egress.*no handler/);
    return true;
  });
});

test('an effect handler gets the message and its output, status and passed headers apply', async () => {
  const seen: unknown[] = [];
  const egress: EffectHandler = (call) => {
    seen.push(call.message);
    return { output: { echoed: call.message }, status: 207, headers: { 'x-backend': 'b1', 'x-other': 'no' } };
  };
  const ir = flow(
    'f',
    [
      step('call', {
        effects: ['http_egress'],
        ntd: { format: 'json', body: '{"q": 1}' },
        responseStatus: '{{ ctx.response.status }}',
      }),
    ],
    { responseHeaders: ['X-Backend'] },
  );
  const r = await runFlow(ir, {}, opts, { effects: { http_egress: egress } });
  assert.deepEqual(seen, [{ q: 1 }]);
  assert.deepEqual(r.output, { echoed: { q: 1 } });
  assert.equal(r.status, 207);
  assert.deepEqual(r.headers, { 'x-backend': 'b1' });
});

test('an effect that throws is a failed call out: EgressError, 502 flow execution failed', async () => {
  const ir = flow('f', [step('call', { effects: ['http_egress'] })]);
  const deps: RunDeps = { effects: { http_egress: () => Promise.reject(new Error('ECONNREFUSED')) } };
  await assert.rejects(runFlow(ir, {}, opts, deps), (e: unknown) => {
    assert.ok(e instanceof EgressError);
    assert.equal(e.status, 502);
    assert.deepEqual(errorBody(e), { ok: false, error: 'flow execution failed' });
    return true;
  });
});

// ---- time limit

test('past maxDurationSecs the next step fails with 500 and limit_secs', async () => {
  let t = 0;
  const ir = flow('f', [step('slow', { effects: ['queue_publish'] }), step('next', {})]);
  const deps: RunDeps = { now: () => t, effects: { queue_publish: (c) => ((t += 3000), { output: c.message }) } };
  await assert.rejects(runFlow(ir, {}, { ...opts, maxDurationSecs: 2 }, deps), (e: unknown) => {
    assert.ok(e instanceof FlowTimeoutError);
    assert.equal(e.status, 500);
    assert.deepEqual(errorBody(e), { error: 'flow exceeded its maximum duration', step: 'next', limit_secs: 2 });
    return true;
  });
  t = 0;
  const ok = await runFlow(ir, {}, { ...opts, maxDurationSecs: 4 }, deps);
  assert.equal(ok.status, 200);
});

// ---- fault handling

const faultIR = (
  steps = [
    step('apologise', {
      ntd: {
        format: 'json',
        body: '{"error": "{{ ctx.input.fault_error }}", "step": "{{ ctx.input.fault_step }}", "cid": "{{ ctx.input.fault_correlation_id }}"}',
      },
    }),
  ],
) => ({ name: 'apologise', line: 20, steps });

test('a fault handler answers with the status the error would have had and its output as body', async () => {
  const ir = flow('f', [step('call', { effects: ['http_egress'] })], { fault: faultIR() });
  const r = await runFlow(ir, {}, opts, { effects: { http_egress: () => Promise.reject(new Error('down')) } });
  assert.equal(r.status, 502);
  assert.equal(r.faultHandled, true);
  // The cause as the log says it (issue 36), not the public text.
  assert.deepEqual(r.output, { error: "step 'call': http_egress failed: down", step: 'call', cid: 'cid-1' });
  assert.ok(r.handledError instanceof EgressError);
});

test('a fault handler also answers validate rejections, keeping their status', async () => {
  const ir = flow('f', [step('check', { validate: [{ expr: 'false', message: 'nope', kind: 'semantic', line: 2 }] })], {
    fault: faultIR(),
  });
  const r = await runFlow(ir, {}, opts);
  assert.equal(r.status, 422);
  assert.deepEqual(r.output, { error: 'nope', step: 'check', cid: 'cid-1' });
});

test("a fault step's response_status and headers override", async () => {
  const ir = flow('f', [step('boom', { ntd: { format: 'text', body: '{{ ctx.nope.x }}' } })], {
    fault: faultIR([
      step('h', {
        responseStatus: '503',
        responseHeaders: { 'retry-after': '5' },
        ntd: { format: 'text', body: 'later' },
      }),
    ]),
  });
  const r = await runFlow(ir, {}, opts);
  assert.deepEqual([r.status, r.headers, r.output], [503, { 'retry-after': '5' }, 'later']);
});

test('a failing fault handler answers 500 fault handler failed', async () => {
  const ir = flow('f', [step('boom', { ntd: { format: 'text', body: '{{ ctx.nope.x }}' } })], {
    fault: faultIR([step('h', { ntd: { format: 'text', body: '{{ ctx.also.missing }}' } })]),
  });
  await assert.rejects(runFlow(ir, {}, opts), (e: unknown) => {
    assert.ok(e instanceof FaultHandlerFailedError);
    assert.equal(e.status, 500);
    assert.deepEqual(errorBody(e), { ok: false, error: 'fault handler failed' });
    return true;
  });
});

test('the time limit is not handed to the fault handler', async () => {
  let t = 0;
  const ir = flow('f', [step('a', { effects: ['queue_publish'] }), step('b', {})], { fault: faultIR() });
  const deps: RunDeps = { now: () => t, effects: { queue_publish: (c) => ((t += 5000), { output: c.message }) } };
  await assert.rejects(runFlow(ir, {}, { ...opts, maxDurationSecs: 1 }, deps), FlowTimeoutError);
});

// ---- composition

function registry(...flows: FlowIR[]): RunDeps['loadFlow'] {
  const byName = new Map(flows.map((f) => [f.flow, f]));
  return (tenant, name) => {
    const ir = byName.get(name);
    return ir && ir.tenant === tenant
      ? ({ ir, version: '1', hash: 'h', created_at: '2024-01-01T00:00:00Z' } satisfies LoadedFlow)
      : undefined;
  };
}

const double = flow('double', [step('d', { ntd: { format: 'json', body: '{"v": {{ ctx.input.v * 2 }}}' } })]);

test('call_flow runs another flow of the tenant on the message; its output is the step output', async () => {
  const ir = flow('main', [
    step('c', { callFlow: 'double', ntd: { format: 'json', body: '{"v": {{ ctx.input.n }}}' } }),
  ]);
  const r = await runFlow(ir, { n: 4 }, opts, { loadFlow: registry(double) });
  assert.deepEqual(r.output, { v: 8 });
});

test('call_flow to a missing flow is a defect, a loader integrity failure stays an IntegrityError', async () => {
  const ir = flow('main', [step('c', { callFlow: 'ghost' })]);
  await assert.rejects(runFlow(ir, {}, opts, { loadFlow: registry() }), FlowDefectError);
  const bad = () => {
    throw new IntegrityError('hash mismatch');
  };
  await assert.rejects(runFlow(ir, {}, opts, { loadFlow: bad }), (e: unknown) => {
    assert.ok(e instanceof IntegrityError);
    assert.deepEqual(errorBody(e), { ok: false, error: 'internal error' });
    return true;
  });
});

test('errors of a called flow reach the caller with their status', async () => {
  const strict = flow('strict', [
    step('v', { validate: [{ expr: 'ctx.input.v > 10', message: 'too small', kind: 'semantic', line: 1 }] }),
  ]);
  const ir = flow('main', [step('c', { callFlow: 'strict' })]);
  await assert.rejects(
    runFlow(ir, { v: 1 }, opts, { loadFlow: registry(strict) }),
    (e: unknown) => e instanceof ValidationRejectedError && e.status === 422,
  );
});

test('a flow calling itself is stopped at the call depth limit as a defect', async () => {
  const loop = flow('loop', [step('again', { callFlow: 'loop' })]);
  await assert.rejects(runFlow(loop, {}, opts, { loadFlow: registry(loop), maxCallDepth: 5 }), (e: unknown) => {
    assert.ok(e instanceof FlowDefectError);
    assert.match(e.detail, /limit 5/);
    return true;
  });
});

test('foreach runs the action per element in order with ctx.item and ctx.index', async () => {
  const order: unknown[] = [];
  const ir = flow('f', [
    step('each', {
      foreach: 'ctx.input.items',
      effects: ['queue_publish'],
      ntd: { format: 'json', body: '{"i": {{ ctx.index }}, "x": {{ ctx.item }}}' },
    }),
  ]);
  const r = await runFlow(ir, { items: [5, 6, 7] }, opts, {
    effects: { queue_publish: (c) => (order.push(c.message), { output: c.message }) },
  });
  assert.deepEqual(r.output, [
    { i: 0, x: 5 },
    { i: 1, x: 6 },
    { i: 2, x: 7 },
  ]);
  assert.deepEqual(order, r.output);
});

test('foreach over a non-list is a defect', async () => {
  await assert.rejects(runFlow(flow('f', [step('each', { foreach: 'ctx.input' })]), { a: 1 }, opts), FlowDefectError);
});

test('split runs the called flow per element concurrently, bounded, results in element order', async () => {
  let inFlight = 0;
  let peak = 0;
  const slow: FlowIR = flow('slow', [step('wait', { effects: ['http_egress'] })]);
  const egress: EffectHandler = async (c) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    const v = (c.message as { v: number }).v;
    await new Promise((r) => setTimeout(r, (10 - v) * 2));
    inFlight--;
    return { output: v * 100 };
  };
  const ir = flow('main', [
    step('fan', { split: 'ctx.input.list', callFlow: 'slow', ntd: { format: 'json', body: '{"v": {{ ctx.item }}}' } }),
  ]);
  const r = await runFlow(ir, { list: [1, 2, 3, 4, 5, 6, 7, 8, 9] }, opts, {
    loadFlow: registry(slow),
    effects: { http_egress: egress },
    splitConcurrency: 3,
  });
  assert.deepEqual(r.output, [100, 200, 300, 400, 500, 600, 700, 800, 900]);
  assert.equal(peak, 3);
});

test('fork runs each flow on the same message and maps flow names to outputs', async () => {
  const plus = flow('plus', [step('p', { ntd: { format: 'json', body: '{"v": {{ ctx.input.v + 1 }}}' } })]);
  const ir = flow('main', [step('both', { fork: ['double', 'plus'] })]);
  const r = await runFlow(ir, { v: 5 }, opts, { loadFlow: registry(double, plus) });
  assert.deepEqual(r.output, { double: { v: 10 }, plus: { v: 6 } });
});

test("a called flow's fault handler answers for it; its output becomes the step output", async () => {
  const fragile = flow('fragile', [step('x', { ntd: { format: 'text', body: '{{ ctx.nope.x }}' } })], {
    fault: faultIR([step('h', { ntd: { format: 'text', body: 'recovered' } })]),
  });
  const r = await runFlow(flow('main', [step('c', { callFlow: 'fragile' })]), {}, opts, {
    loadFlow: registry(fragile),
  });
  assert.deepEqual([r.status, r.output, r.faultHandled], [200, 'recovered', false]);
});

test('an execution keeps the IR object it started with, and a compiled flow is reused', async () => {
  const ir = flow('f', [step('a', { ntd: { format: 'text', body: 'v1' } })]);
  const first = await runFlow(ir, {}, opts);
  assert.equal(first.output, 'v1');
  const again = await runFlow(ir, {}, opts);
  assert.equal(again.output, 'v1');
});

// ---- tracing

test('with tracing on, step_traced rows carry the entry label, each step output, and foreach/fault labels', async () => {
  const events = memoryEvents();
  const ir = flow(
    'f',
    [
      step('a', { ntd: { format: 'json', body: '{"password": "p", "n": 1}' } }),
      step('each', { foreach: '[1, 2]' }),
      step('boom', { ntd: { format: 'text', body: '{{ ctx.nope.x }}' } }),
    ],
    { fault: faultIR([step('h', { ntd: { format: 'text', body: 'ok' } })]) },
  );
  await runFlow(ir, { in: 1 }, { ...opts, trace: true, entryLabel: 'received' }, { events });
  assert.deepEqual(
    events.events.map((e) => e.step),
    ['received', 'a', 'foreach[0]', 'foreach[1]', 'each', 'fault', 'h'],
  );
  assert.ok(events.events.every((e) => e.event === 'step_traced' && e.correlation_id === 'cid-1' && e.flow === 'f'));
  const none = memoryEvents();
  await runFlow(ir, { in: 1 }, opts, { events: none });
  assert.equal(none.events.length, 0);
});

test('with tracing on, composition writes entry rows: call_flow in the called flow, split[i] per branch, fork[i] in each forked flow', async () => {
  const events = memoryEvents();
  const child = flow('child', [step('x', { ntd: { format: 'text', body: 'c' } })]);
  const ir = flow('main', [
    step('call', { callFlow: 'child' }),
    step('sp', { split: '[1, 2]' }),
    step('fk', { fork: ['child'] }),
  ]);
  await runFlow(ir, {}, { ...opts, trace: true, entryLabel: 'received' }, { events, loadFlow: registry(child) });
  const rows = events.events.map((e) => `${e.flow}:${e.step}`);
  assert.deepEqual(rows, [
    'main:received',
    'child:call_flow',
    'child:x',
    'main:call',
    'main:split[0]',
    'main:split[1]',
    'main:sp',
    'child:fork[0]',
    'child:x',
    'main:fk',
  ]);
});

test('a plain http_egress step gets no step_traced row', async () => {
  const events = memoryEvents();
  const ir = flow('f', [step('call', { effects: ['http_egress'] })]);
  await runFlow(
    ir,
    {},
    { ...opts, trace: true },
    { events, effects: { http_egress: () => ({ output: 1, status: 200 }) } },
  );
  assert.deepEqual(
    events.events.map((e) => e.step),
    [],
  );
});

test('soap_fault_code and soap_fault_string written by set_ctx travel with the error', async () => {
  const ir = flow('f', [
    step('mark', { setCtx: { soap_fault_code: 'soap:Client', soap_fault_string: 'bad order {{ ctx.input.id }}' } }),
    step('boom', { effects: ['http_egress'] }),
  ]);
  await assert.rejects(
    runFlow(ir, { id: 7 }, opts, { effects: { http_egress: () => Promise.reject(new Error('x')) } }),
    (e: unknown) => {
      assert.ok(e instanceof EgressError);
      assert.deepEqual(e.soapFault, { code: 'soap:Client', string: 'bad order 7' });
      return true;
    },
  );
});

test('the value read by secret_read never appears in trace rows', async () => {
  const events = memoryEvents();
  const ir = flow('f', [
    step('api-key', { effects: ['secret_read'] }),
    step('use', { ntd: { format: 'json', body: '{"ok": {{ size(ctx.api_key) > 0 }}}' } }),
  ]);
  const r = await runFlow(
    ir,
    { a: 1 },
    { ...opts, trace: true, entryLabel: 'received' },
    { events, env: { SVC_SECRET_API_KEY: 's3cr3t-value' } },
  );
  assert.deepEqual(r.output, { ok: true });
  assert.equal(events.events.length, 3);
  assert.ok(!JSON.stringify(events.events.map((e) => e.payload)).includes('s3cr3t-value'));
});

test('a false condition inside a called flow ends only that flow, never filtering the delivery', async () => {
  const gate = flow('gate', [step('g', { condition: 'false' })]);
  const ir = flow('main', [step('c', { callFlow: 'gate' }), step('after', { ntd: { format: 'text', body: 'after' } })]);
  const r = await runFlow(ir, {}, { ...opts, delivery: 'queue' }, { loadFlow: registry(gate) });
  assert.deepEqual([r.filtered, r.output], [false, 'after']);
});

test('foreach accepts the expression written as one whole hole', async () => {
  const r = await runFlow(flow('f', [step('each', { foreach: '{{ ctx.input.list }}' })]), { list: ['a', 'b'] }, opts);
  assert.deepEqual(r.output, ['a', 'b']);
});

test('readsHeaders: only a flow that can observe ctx.headers needs them built', () => {
  const reads = (ir: FlowIR) => prepareFlow(ir).readsHeaders;
  const plain = flow('f', [
    step('a', {
      validate: [{ line: 1, expr: 'has(ctx.input.id)', message: 'id', kind: 'syntactic' }],
      ntd: { format: 'json', body: '{"id": "{{ ctx.input.id }}"}' },
    }),
  ]);
  assert.equal(reads(plain), false);
  assert.equal(reads(flow('f', [step('a', { ntd: { format: 'text', body: '{{ ctx.headers.x }}' } })])), true);
  assert.equal(reads(flow('f', [step('a', { condition: 'ctx["head" + "ers"] != null' })])), true, 'an index into ctx');
  assert.equal(
    reads(flow('f', [step('a', { ntd: { format: 'text', body: '{{ ctx }}' } })])),
    true,
    'the whole context',
  );
  assert.equal(reads(flow('f', [step('a', { callFlow: 'other' })])), true, 'a callee shares the headers');
  assert.equal(reads(flow('f', [step('a', { fork: ['x', 'y'] })])), true);
  assert.equal(
    reads(
      flow('f', [step('a')], {
        dedup: { key: 'ctx.headers["idempotency-key"]', memoizeResponse: false, onFailure: 'absorb' },
      }),
    ),
    true,
    'a dedup key',
  );
  assert.equal(
    reads(
      flow('f', [step('a')], {
        fault: { steps: [step('h', { setCtx: { who: '{{ ctx.headers["x-user"] }}' } })] },
      } as Partial<FlowIR>),
    ),
    true,
    'the fault section',
  );
});

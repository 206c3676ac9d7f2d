import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultHandlerFailedError, FlowDefectError } from '../../../src/common/errors.js';
import { JSON_MAX_DEPTH } from '../../../src/common/json-depth.js';
import { runFlow } from '../../../src/engine/run-flow.js';
import { flow, memoryEvents, step } from '../../helpers/engine-fixtures.js';
import type { EffectCall, LoadedFlow, RunDeps } from '../../../src/engine/types.js';
import type { FlowIR, StepIR } from '../../../src/ir/types.js';

const opts = { correlationId: 'cid-1' };

/** `depth` lists nested around `leaf`. */
function nestedList(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** An ntd wrapping its input in `levels` lists. */
const wrap = (name: string, levels: number, fields: Partial<StepIR> = {}): StepIR =>
  step(name, { ntd: { format: 'json', body: `${'['.repeat(levels)}{{ ctx.input }}${']'.repeat(levels)}` }, ...fields });

/** 100 steps each wrapping 100 levels: 10,000 levels in all, had nothing stopped them. */
const deepening = Array.from({ length: 100 }, (_, i) => wrap(`w${i + 1}`, 100));

function registry(...flows: FlowIR[]): RunDeps['loadFlow'] {
  const byName = new Map(flows.map((f) => [f.flow, f]));
  return (_tenant, name) => {
    const ir = byName.get(name);
    return ir ? ({ ir, version: '1', hash: 'h', created_at: '2024-01-01T00:00:00Z' } satisfies LoadedFlow) : undefined;
  };
}

/** A child answering its input (100 levels in the case below) inside 28 more lists: at the limit; the parent's fork wraps it once more. */
const child = flow('child', [wrap('c', 28)]);

interface Case {
  what: string;
  ir: FlowIR;
  input: unknown;
  /** The defect's detail, when the flow must fail. */
  fails?: RegExp;
  deps?: RunDeps;
}

const published: unknown[] = [];
const publish = { queue_publish: (c: EffectCall) => (published.push(c.message), { output: c.message }) };

const cases: Case[] = [
  {
    what: 'an ordinary flow',
    ir: flow('f', [
      wrap('w', 3),
      step('v', { validate: [{ expr: 'size(ctx.input) == 1', message: 'm', kind: 'semantic', line: 1 }] }),
    ]),
    input: { a: 1 },
  },
  { what: 'an output exactly at the limit', ir: flow('f', [wrap('w', JSON_MAX_DEPTH - 1)]), input: { a: 1 } },
  {
    what: 'an output one level past the limit',
    ir: flow('f', [wrap('w', JSON_MAX_DEPTH)]),
    input: { a: 1 },
    fails: /^step 'w': its output nests deeper than 128 levels/,
  },
  {
    what: 'steps deepening the value one after another',
    ir: flow('f', deepening),
    input: { a: 1 },
    fails: /^step 'w2': its output nests deeper than 128 levels/,
  },
  {
    what: 'an input 10,000 deep wrapped once',
    ir: flow('f', [wrap('w', 1)]),
    input: nestedList(10_000, 1),
    fails: /^step 'w': its output nests deeper/,
  },
  {
    what: 'an input 10,000 deep passed through',
    ir: flow('f', [step('v', { validate: [{ expr: 'has(ctx.input)', message: 'm', kind: 'semantic', line: 1 }] })]),
    input: { input: nestedList(10_000, 1) },
  },
  {
    what: 'a set_ctx value past the limit',
    ir: flow('f', [step('s', { setCtx: { saved: '{{ [ctx.input] }}' } })]),
    input: nestedList(JSON_MAX_DEPTH, 1),
    fails: /^step 's': set_ctx\.saved nests deeper than 128 levels/,
  },
  {
    what: 'an ntd message past the limit never reaches the effect',
    ir: flow('f', [wrap('p', 100, { effects: ['queue_publish'] })], { effects: ['queue_publish'] }),
    input: nestedList(100, 1),
    deps: { effects: publish },
    fails: /^step 'p': the ntd message nests deeper than 128 levels/,
  },
  {
    what: 'a foreach list past the limit',
    ir: flow('f', [step('each', { foreach: '[ctx.input]', effects: ['queue_publish'] })], {
      effects: ['queue_publish'],
    }),
    input: nestedList(JSON_MAX_DEPTH, 1),
    deps: { effects: publish },
    fails: /^step 'each': the foreach list nests deeper than 128 levels/,
  },
  {
    what: 'a fork wrapping a child output at the limit',
    ir: flow('f', [step('fk', { fork: ['child'] })]),
    input: nestedList(100, 1),
    deps: { loadFlow: registry(child) },
    fails: /^step 'fk': its output nests deeper than 128 levels/,
  },
];

for (const c of cases) {
  test(`nesting: ${c.what} ${c.fails ? 'fails the step as a defect' : 'runs'}, without running out of stack`, async () => {
    published.length = 0;
    const events = memoryEvents();
    const run = runFlow(c.ir, c.input, { ...opts, trace: true }, { events, ...c.deps });
    if (c.fails === undefined) {
      const r = await run;
      assert.equal(r.status, 200);
      return;
    }
    const err = await run.then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof FlowDefectError, String(err));
    assert.equal(err.status, 500);
    assert.equal(err.message, 'flow execution failed');
    assert.match(err.detail, c.fails);
    assert.deepEqual(published, [], 'nothing was published');
  });
}

test('nesting: the fault section handles a value past the limit like any defect', async () => {
  const fault = {
    name: 'sorry',
    line: 20,
    steps: [
      step('h', {
        ntd: { format: 'json', body: '{"error": "{{ ctx.input.fault_error }}", "step": "{{ ctx.input.fault_step }}"}' },
      }),
    ],
  };
  const r = await runFlow(flow('f', deepening, { fault }), { a: 1 }, opts);
  assert.equal(r.status, 500);
  assert.equal(r.faultHandled, true);
  assert.deepEqual(r.output, {
    error: "step 'w2': its output nests deeper than 128 levels, the limit for JSON values",
    step: 'w2',
  });
});

test('nesting: a fault section whose own output nests too deep fails as the handler', async () => {
  const fault = { name: 'sorry', line: 20, steps: [wrap('h', JSON_MAX_DEPTH)] };
  await assert.rejects(runFlow(flow('f', deepening, { fault }), { a: 1 }, opts), (e: unknown) => {
    assert.ok(e instanceof FaultHandlerFailedError, String(e));
    assert.match(e.detail, /step 'h': its output nests deeper than 128 levels/);
    return true;
  });
});

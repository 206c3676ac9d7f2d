import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileFlow } from './compile.js';
import { correlationDeclProblems, lowerCorrelation } from './correlation-decl.js';

const messages = (c: Parameters<typeof correlationDeclProblems>[0]) =>
  correlationDeclProblems(c)
    .map((p) => p.message)
    .join('; ');

test('declarations are checked with clear reasons', () => {
  assert.deepEqual(correlationDeclProblems({ open: { key: 'ctx.input.id', deadline_secs: 60 } }), []);
  assert.match(messages({ open: { key: 'x', deadline_secs: 0 } }), /deadline_secs/);
  assert.match(messages({ open: { key: 'x', deadline_secs: 1, bogus: 1 } }), /unknown key "bogus"/);
  assert.match(messages({ state: { a: 'x' } }), /needs correlation_open/);
});

test('an opening declaration lowers to the typed IR, optional fields only when written', () => {
  assert.deepEqual(lowerCorrelation({ open: { key: 'ctx.input.id', deadline_secs: 60 } }), {
    ir: { kind: 'open', key: 'ctx.input.id', deadlineSecs: 60 },
    problems: [],
  });
  const full = lowerCorrelation({
    open: { key: 'ctx.input.id', deadline_secs: 5, on_timeout: 'undo', step: 's1' },
    state: { amount: 'ctx.input.amount' },
  });
  assert.deepEqual(full.ir, {
    kind: 'open',
    key: 'ctx.input.id',
    deadlineSecs: 5,
    onTimeout: 'undo',
    step: 's1',
    state: { amount: 'ctx.input.amount' },
  });
});

test('a closing declaration lowers to the typed IR', () => {
  assert.deepEqual(lowerCorrelation({ open: { closes: 'order', key: 'ctx.input.id' } }).ir, {
    kind: 'close',
    key: 'ctx.input.id',
    closes: 'order',
  });
});

test('a declaration with problems has no IR', () => {
  const r = lowerCorrelation({ open: { key: 'ctx.input.id', timeout_secs: 5 } });
  assert.equal(r.ir, undefined);
  assert.deepEqual(
    r.problems.map((p) => p.key),
    ['correlation_open', 'correlation_open'],
  );
});

test('the compiler emits the typed correlation IR', () => {
  const text = [
    '---',
    'flowdoc_version: "0.1"',
    'flow: order',
    'tenant: acme',
    'correlation_open: {key: ctx.input.id, deadline_secs: 60, on_timeout: order-timeout}',
    'correlation_state: {card: ctx.input.card}',
    '---',
    '## Step: s1',
    '',
  ].join('\n');
  assert.deepEqual(compileFlow(text).ir?.correlation, {
    kind: 'open',
    key: 'ctx.input.id',
    deadlineSecs: 60,
    onTimeout: 'order-timeout',
    state: { card: 'ctx.input.card' },
  });
});

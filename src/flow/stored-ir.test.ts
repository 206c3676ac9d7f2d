import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IntegrityError } from '../common/errors.js';
import { IR_VERSION, type FlowIR } from '../ir/types.js';
import { compileFlow } from './compile.js';
import { upgradeStoredIr, type FlowIRv1 } from './stored-ir.js';

const SRC = '---\nflowdoc_version: "0.1"\nflow: order\ntenant: acme\n---\n## Step: s1\n';
const current = (): FlowIR => compileFlow(SRC).ir!;
/** The same flow as an IR-version-1 artifact stored it, with a correlation declaration as written. */
const v1 = (correlation?: FlowIRv1['correlation']): FlowIRv1 => {
  const { correlation: _drop, ...rest } = current();
  return correlation === undefined ? { ...rest, irVersion: 1 } : { ...rest, irVersion: 1, correlation };
};

test('an artifact of the current IR version is returned as it is', () => {
  const ir = current();
  assert.equal(ir.irVersion, IR_VERSION);
  assert.equal(upgradeStoredIr(ir, 'h'), ir);
});

test('a version-1 artifact without correlation reads as the current version, keys in place', () => {
  const up = upgradeStoredIr(v1(), 'h');
  assert.equal(up.irVersion, IR_VERSION);
  assert.equal(Object.keys(up)[0], 'irVersion');
  assert.equal(up.correlation, undefined);
  assert.deepEqual(up.steps, current().steps);
});

test('a version-1 correlation declaration is typed on load, as the compiler types it', () => {
  const open = upgradeStoredIr(
    v1({ open: { key: 'ctx.input.id', deadline_secs: 5, on_timeout: 'undo' }, state: { amount: 'ctx.input.amount' } }),
    'h',
  );
  assert.deepEqual(open.correlation, {
    kind: 'open',
    key: 'ctx.input.id',
    deadlineSecs: 5,
    onTimeout: 'undo',
    state: { amount: 'ctx.input.amount' },
  });
  const close = upgradeStoredIr(v1({ open: { closes: 'order', key: 'ctx.input.id' } }), 'h');
  assert.deepEqual(close.correlation, { kind: 'close', key: 'ctx.input.id', closes: 'order' });
});

test('a malformed version-1 correlation declaration makes the artifact unreadable, naming every problem', () => {
  assert.throws(
    () => upgradeStoredIr(v1({ open: { key: 'ctx.input.id', timeout_secs: 5 } }), 'abc123'),
    (err) => {
      assert.ok(err instanceof IntegrityError);
      assert.match(err.message, /artifact abc123 of acme\/order has a malformed correlation declaration/);
      assert.match(err.message, /unknown key "timeout_secs"/);
      assert.match(err.message, /deadline_secs/);
      assert.match(err.message, /re-deploy/);
      return true;
    },
  );
});

test('an IR version this svc does not read makes the artifact unreadable', () => {
  for (const irVersion of [IR_VERSION + 1, undefined, 'x']) {
    const stored = { ...current(), irVersion } as unknown as FlowIR;
    assert.throws(
      () => upgradeStoredIr(stored, 'h'),
      (err) => err instanceof IntegrityError && /this svc reads versions 1 to/.test(err.message),
    );
  }
});

// The targets' verdicts: a ratio at or past its target is met, short of it missed, and a ratio a
// run did not measure is neither.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ratioOf, reachLine, targetLines, targetMet } from './targets.js';

test('at least and at most, at, past and short of the target; not measured', () => {
  assert.equal(targetMet({ what: 'a', value: 0.8, target: 0.8, direction: 'at least' }), true);
  assert.equal(targetMet({ what: 'a', value: 0.79, target: 0.8, direction: 'at least' }), false);
  assert.equal(targetMet({ what: 'p', value: 2, target: 2, direction: 'at most' }), true);
  assert.equal(targetMet({ what: 'p', value: 2.1, target: 2, direction: 'at most' }), false);
  assert.equal(targetMet({ what: 'n', value: undefined, target: 1, direction: 'at least' }), undefined);
  assert.equal(targetMet({ what: 'n', value: NaN, target: 1, direction: 'at least' }), undefined);
});

test('ratioOf: undefined when a side is missing or the divisor is zero', () => {
  assert.equal(ratioOf(3, 2), 1.5);
  assert.equal(ratioOf(undefined, 2), undefined);
  assert.equal(ratioOf(3, undefined), undefined);
  assert.equal(ratioOf(3, 0), undefined);
});

test('targetLines: one line each, with the value, the target and the verdict', () => {
  const text = targetLines([
    { what: '/run / bare', value: 0.62, target: 0.8, direction: 'at least' },
    { what: 'drain / BullMQ', value: 2.5, target: 2, direction: 'at least', unit: 'x' },
    { what: 'PostgreSQL', value: undefined, target: 4, direction: 'at least', unit: 'x' },
    { what: 'rollups on / off', value: 0.9684, target: 0.97, direction: 'at least' },
  ]);
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, 4);
  assert.match(lines[0]!, /\/run \/ bare\s+0\.620\s+\(target >= 0\.80\)\s+MISSED$/);
  assert.match(lines[1]!, /drain \/ BullMQ\s+2\.500x\s+\(target >= 2\.00x\)\s+met$/);
  assert.match(lines[2]!, /PostgreSQL\s+-\s+\(target >= 4\.00x\)\s+not measured in this run$/);
  // Three decimals: a ratio just short of its target does not print as the target.
  assert.match(lines[3]!, /rollups on \/ off\s+0\.968\s+\(target >= 0\.97\)\s+MISSED$/);
});

test('reachLine: a wanted rate within or past the ceiling of the same run, or not measured', () => {
  assert.equal(
    reachLine('6 x Node-RED', 45_540, 78_000),
    '6 x Node-RED: 45540 req/s, 0.58 of the node:net ceiling (78000 req/s): within reach of a server on this runtime\n',
  );
  assert.match(reachLine('6 x Node-RED', 90_000, 78_000), /1\.15 of the node:net ceiling .*: past what any server/);
  assert.equal(reachLine('6 x Node-RED', undefined, 78_000), '6 x Node-RED: not measured in this run\n');
  assert.equal(reachLine('6 x Node-RED', 45_540, undefined), '6 x Node-RED: not measured in this run\n');
  assert.equal(reachLine('6 x Node-RED', 45_540, 0), '6 x Node-RED: not measured in this run\n');
});

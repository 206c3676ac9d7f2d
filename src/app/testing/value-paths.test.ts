import assert from 'node:assert/strict';
import { test } from 'node:test';
import { differences, MISSING, parsePath, valueAt } from './value-paths.js';

const PATHS: [string, (string | number)[] | undefined][] = [
  ['$', []],
  ['$.a', ['a']],
  ['a.b', ['a', 'b']],
  ['$.items[0].sku', ['items', 0, 'sku']],
  ["$['x-y'].z", ['x-y', 'z']],
  ['$["a b"]', ['a b']],
  ['[2]', [2]],
  ['$.x-id', ['x-id']],
  ['$..a', undefined],
  ['$.a[', undefined],
  ['$.a[-1]', undefined],
];
for (const [path, want] of PATHS)
  test(`the path ${path} reads as ${JSON.stringify(want)}`, () => assert.deepEqual(parsePath(path), want));

test('valueAt finds a value, and says MISSING where there is none (never undefined, which JSON lacks)', () => {
  const v = { a: [{ b: null }], n: 0 };
  assert.equal(valueAt(v, ['a', 0, 'b']), null);
  assert.equal(valueAt(v, ['n']), 0);
  assert.equal(valueAt(v, ['a', 1]), MISSING);
  assert.equal(valueAt(v, ['z']), MISSING);
  assert.equal(valueAt(v, ['a', 'length']), MISSING);
  assert.equal(valueAt(v, ['constructor']), MISSING);
});

test('differences name every place by path: changed, missing, extra, in maps and lists', () => {
  assert.deepEqual(differences({ a: 1, b: [1, 2] }, { a: 1, b: [1, 2] }), []);
  assert.deepEqual(differences({ a: 1, b: [1, 2], c: 'x' }, { a: 2, b: [1], d: true }), [
    { path: '$.a', expected: 1, actual: 2 },
    { path: '$.b[1]', expected: 2, actual: MISSING },
    { path: '$.c', expected: 'x', actual: MISSING },
    { path: '$.d', expected: MISSING, actual: true },
  ]);
  assert.deepEqual(differences(1, '1'), [{ path: '$', expected: 1, actual: '1' }]);
  assert.deepEqual(differences({ 'x-y': 1 }, { 'x-y': 2 }), [{ path: '$.x-y', expected: 1, actual: 2 }]);
});

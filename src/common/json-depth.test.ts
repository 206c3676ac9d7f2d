import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JSON_MAX_DEPTH, jsonNestsDeeperThan } from './json-depth.js';

const nested = (depth: number) => Buffer.from('['.repeat(depth) + ']'.repeat(depth));

test('nesting up to the limit passes, one deeper does not; brackets inside strings do not count', () => {
  assert.equal(jsonNestsDeeperThan(nested(JSON_MAX_DEPTH)), false);
  assert.equal(jsonNestsDeeperThan(nested(JSON_MAX_DEPTH + 1)), true);
  assert.equal(jsonNestsDeeperThan(nested(5000)), true);
  assert.equal(jsonNestsDeeperThan(Buffer.from(JSON.stringify({ s: '['.repeat(1000), t: 'a\\"[[[' }))), false);
  assert.equal(jsonNestsDeeperThan(Buffer.from('{"a":'.repeat(200) + '1' + '}'.repeat(200))), true);
});

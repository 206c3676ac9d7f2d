import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JSON_MAX_DEPTH, jsonNestsDeeperThan, valueNestsDeeperThan } from './json-depth.js';
import { XmlValue } from './xml-value.js';

const nested = (depth: number) => Buffer.from('['.repeat(depth) + ']'.repeat(depth));

test('nesting up to the limit passes, one deeper does not; brackets inside strings do not count', () => {
  assert.equal(jsonNestsDeeperThan(nested(JSON_MAX_DEPTH)), false);
  assert.equal(jsonNestsDeeperThan(nested(JSON_MAX_DEPTH + 1)), true);
  assert.equal(jsonNestsDeeperThan(nested(5000)), true);
  assert.equal(jsonNestsDeeperThan(Buffer.from(JSON.stringify({ s: '['.repeat(1000), t: 'a\\"[[[' }))), false);
  assert.equal(jsonNestsDeeperThan(Buffer.from('{"a":'.repeat(200) + '1' + '}'.repeat(200))), true);
});

/** `depth` lists nested in one another around `leaf`: [[...[leaf]...]]. */
function nestedList(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** `depth` objects nested under key "a" around `leaf`. */
function nestedObject(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

interface ValueCase {
  what: string;
  value: unknown;
  deeper: boolean;
  /** Also check that the JSON text gives the same answer (where JSON.stringify can write the value). */
  asText?: boolean;
}

const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;

const valueCases: ValueCase[] = [
  { what: 'a scalar', value: 'text', deeper: false },
  { what: 'null', value: null, deeper: false },
  {
    what: 'an ordinary document',
    value: { id: 'o-1', lines: [{ sku: 'a', qty: 2 }], meta: {} },
    deeper: false,
    asText: true,
  },
  { what: 'lists nested exactly to the limit', value: nestedList(JSON_MAX_DEPTH - 1, []), deeper: false, asText: true },
  { what: 'lists nested one past the limit', value: nestedList(JSON_MAX_DEPTH, []), deeper: true, asText: true },
  { what: 'objects nested exactly to the limit', value: nestedObject(JSON_MAX_DEPTH), deeper: false, asText: true },
  { what: 'objects nested one past the limit', value: nestedObject(JSON_MAX_DEPTH + 1), deeper: true, asText: true },
  { what: 'lists nested 10,000 deep', value: nestedList(10_000), deeper: true },
  { what: 'objects nested 100,000 deep', value: nestedObject(100_000), deeper: true },
  {
    what: 'the deep branch last among shallow siblings',
    value: { a: [1, 2, { b: 3 }], z: nestedList(20_000) },
    deeper: true,
  },
  {
    what: 'an object without prototype',
    value: Object.assign(Object.create(null) as object, { a: nestedList(200) }),
    deeper: true,
    asText: true,
  },
  {
    what: 'a Buffer, Date or XML value counts as a scalar',
    value: [Buffer.from('x'), new Date(0), new XmlValue('<a/>', 'a')],
    deeper: false,
  },
  { what: 'a cycle counts as too deep', value: cyclic, deeper: true },
];

test('valueNestsDeeperThan: the limit counted as jsonNestsDeeperThan counts brackets, at any depth without running out of stack', () => {
  for (const c of valueCases) {
    assert.equal(valueNestsDeeperThan(c.value), c.deeper, c.what);
    if (c.asText)
      assert.equal(jsonNestsDeeperThan(Buffer.from(JSON.stringify(c.value))), c.deeper, `${c.what}, as JSON text`);
  }
  assert.equal(valueNestsDeeperThan(nestedList(3), 3), false);
  assert.equal(valueNestsDeeperThan(nestedList(4), 3), true);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { XmlValue } from '../common/xml-value.js';
import { toPlain } from './to-plain.js';

/** The recursive toPlain this walk replaced: the oracle for ordinary values. */
function recursivePlain(v: unknown): unknown {
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined':
      return v;
    case 'bigint':
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
    case 'object':
      break;
    default:
      return String(v);
  }
  if (v === null || v instanceof XmlValue) return v;
  if (Array.isArray(v)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      const c = recursivePlain(item);
      if (c !== item && copy === undefined) copy = v.slice(0, i);
      if (copy !== undefined) copy.push(c);
    }
    return copy ?? v;
  }
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (v instanceof Map) return recursivePlain(Object.fromEntries(v));
  if (v instanceof Set) return recursivePlain([...v]);
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return String(v);
  const obj = v as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const k of Object.keys(obj)) {
    const item = obj[k];
    const c = recursivePlain(item);
    if (c !== item && copy === undefined) copy = { ...obj };
    if (copy !== undefined) copy[k] = c;
  }
  return copy ?? obj;
}

class Money {
  toString(): string {
    return '12.50 EUR';
  }
}

const plainDoc = {
  id: 'o-1',
  lines: [
    { sku: 'a', qty: 2 },
    { sku: 'b', qty: 1 },
  ],
  meta: {},
};

const ordinary: { what: string; value: unknown }[] = [
  { what: 'scalars', value: ['a', 1, true, undefined, null] },
  { what: 'a plain document, unchanged', value: plainDoc },
  { what: 'BigInts small and huge', value: { small: 7n, huge: 2n ** 70n, list: [1n, -(2n ** 60n)] } },
  {
    what: 'a Date, bytes and an XML value',
    value: {
      at: new Date('2024-01-02T03:04:05.000Z'),
      raw: new Uint8Array([104, 105]),
      xml: new XmlValue('<a/>', 'a'),
    },
  },
  {
    what: 'a Map holding a Set holding a BigInt',
    value: new Map<string, unknown>([
      ['k', new Set([1n, 'x'])],
      ['d', plainDoc],
    ]),
  },
  {
    what: 'a change deep inside, siblings untouched',
    value: { keep: plainDoc, change: [[[{ n: 3n }]]], after: [1, 2] },
  },
  { what: 'a class instance becomes its text', value: { price: new Money() } },
  { what: 'a symbol becomes its text', value: [Symbol.for('s')] },
  { what: 'an object without prototype', value: Object.assign(Object.create(null) as object, { n: 1n, ok: 'x' }) },
];

/** The paths, from `root`, of the containers that came back as the same reference. */
function sameReferences(input: unknown, output: unknown, path = '$'): string[] {
  if (input === null || typeof input !== 'object' || output === null || typeof output !== 'object') return [];
  const here = input === output ? [path] : [];
  const keys = Object.keys(input);
  return [
    ...here,
    ...keys.flatMap((k) =>
      sameReferences((input as Record<string, unknown>)[k], (output as Record<string, unknown>)[k], `${path}.${k}`),
    ),
  ];
}

test('toPlain gives what the recursive walk gave for ordinary values, sharing the same unchanged parts', () => {
  for (const { what, value } of ordinary) {
    // At the top the walk recurses; 100 lists down it keeps its path on the heap: both give the same.
    for (const [where, v] of [
      ['at the top', value],
      ['100 lists down', nestedList(100, value)],
    ] as const) {
      const expected = recursivePlain(v);
      const actual = toPlain(v);
      assert.deepEqual(actual, expected, `${what}, ${where}`);
      assert.deepEqual(
        sameReferences(v, actual),
        sameReferences(v, expected),
        `${what}, ${where}: the same parts are shared`,
      );
    }
  }
  assert.equal(toPlain(plainDoc), plainDoc, 'nothing to convert: no copy at all');
});

/** `depth` lists nested around `leaf`. */
function nestedList(depth: number, leaf: unknown): unknown[] {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v as unknown[];
}

/** The innermost value of lists nested in one another. */
function innermost(v: unknown): unknown {
  while (Array.isArray(v)) v = v[0];
  return v;
}

test('toPlain converts values of any depth without recursion', () => {
  const deepObjects = JSON.parse('{"a":'.repeat(10_000) + '0' + '}'.repeat(10_000)) as unknown;
  const deepLists = nestedList(50_000, 'x');
  const cases: { what: string; value: unknown; check: (out: unknown) => void }[] = [
    {
      what: 'a BigInt at the bottom of 10,000 lists',
      value: nestedList(10_000, 5n),
      check: (out) => assert.equal(innermost(out), 5),
    },
    {
      what: '50,000 lists with nothing to convert come back as they are',
      value: deepLists,
      check: (out) => assert.equal(out, deepLists),
    },
    {
      what: '10,000 objects with nothing to convert come back as they are',
      value: deepObjects,
      check: (out) => assert.equal(out, deepObjects),
    },
    {
      what: 'a Set inside 20,000 Maps',
      value: nestedMaps(20_000),
      check: (out) => assert.deepEqual(innermostOf(out), [1]),
    },
  ];
  for (const c of cases) c.check(toPlain(c.value));
});

function nestedMaps(depth: number): unknown {
  let v: unknown = new Set([1n]);
  for (let i = 0; i < depth; i++) v = new Map([['m', v]]);
  return v;
}

function innermostOf(v: unknown): unknown {
  while (v !== null && typeof v === 'object' && !Array.isArray(v)) v = (v as { m: unknown }).m;
  return v;
}

test('a value that contains itself converts in finite time: a few levels are copied, then the cycle is kept as found', () => {
  const loop: Record<string, unknown> = { n: 1n };
  loop.self = loop;
  const out = toPlain(loop) as Record<string, unknown>;
  assert.equal(out.n, 1);
  let v = out;
  let hops = 0;
  for (; v !== loop && hops < 1000; hops++) v = v.self as Record<string, unknown>;
  assert.equal(v, loop, `the original is reached after ${hops} copies`);
});

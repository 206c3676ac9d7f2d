import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JSON_MAX_DEPTH, NestingTooDeepError } from './json-depth.js';
import { GLOBAL_MASK, GLOBAL_MASK_FIELDS, MASK, MaskSet, maskPayload, stripCredentialHeaders } from './mask.js';
import { XmlValue } from './xml-value.js';

test('the global list holds exactly 25 distinct names', () => {
  assert.equal(GLOBAL_MASK_FIELDS.length, 25);
  assert.equal(new Set(GLOBAL_MASK_FIELDS).size, 25);
});

test('masked fields are replaced at any depth, case-insensitively, inside lists too', () => {
  const input = {
    user: { Password: 'p', profile: { API_KEY: 'k', name: 'n' } },
    list: [{ token: 't' }, { ok: 1 }],
    'Set-Cookie': 'c',
  };
  const out = maskPayload(input);
  assert.deepEqual(out, {
    user: { Password: '***', profile: { API_KEY: '***', name: 'n' } },
    list: [{ token: '***' }, { ok: 1 }],
    'Set-Cookie': '***',
  });
  assert.equal((input.user as { Password: string }).Password, 'p', 'the input is not modified');
});

test("a flow's extra fields are masked in addition to the global list", () => {
  const mask = new MaskSet(['IBAN', 'birth_date']);
  assert.deepEqual(maskPayload({ iban: 'DE..', nested: { Birth_Date: 'x', secret: { deep: 1 } } }, mask), {
    iban: '***',
    nested: { Birth_Date: '***', secret: '***' },
  });
  assert.deepEqual(maskPayload({ iban: 'DE..' }), { iban: 'DE..' });
});

test('credential headers are removed from a header map', () => {
  assert.deepEqual(
    stripCredentialHeaders({
      Authorization: 'a',
      'set-cookie': 'b',
      Cookie: 'c',
      'WWW-Authenticate': 'd',
      'proxy-authorization': 'e',
      'x-ok': 'f',
    }),
    { 'x-ok': 'f' },
  );
});

/** The recursive walk maskPayload replaced (with the log writer's XML pass before it): the oracle for ordinary values. */
function recursiveMask(value: unknown, mask: MaskSet, xml: boolean, seen = new WeakSet<object>()): unknown {
  if (xml && value instanceof XmlValue) return { _unrepresentable: value.root };
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[circular]';
  if (Array.isArray(value)) {
    seen.add(value);
    const out = value.map((v) => recursiveMask(v, mask, xml, seen));
    seen.delete(value);
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  seen.add(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = mask.has(k) ? MASK : recursiveMask(v, mask, xml, seen);
  seen.delete(value);
  return out;
}

const loop: Record<string, unknown> = { name: 'loop', password: 'p' };
loop.again = [loop, { inner: loop }];
const shared = { token: 't', v: 1 };

const ordinary: { what: string; value: unknown }[] = [
  { what: 'a scalar', value: 42 },
  {
    what: 'a document with secrets at several depths',
    value: {
      user: { Password: 'p', profile: { API_KEY: 'k', name: 'n' } },
      list: [{ token: 't' }, { ok: 1 }],
      'Set-Cookie': 'c',
    },
  },
  { what: 'a masked field holding an object', value: { secret: { deep: [1, 2] }, keep: { deep: [1, 2] } } },
  { what: 'lists of lists', value: [[1, [2, { pin: 1234 }]], [], [[[]]]] },
  {
    what: 'XML values, kept or replaced',
    value: { doc: new XmlValue('<order><id>1</id></order>', 'order'), list: [new XmlValue('<a/>', 'a')] },
  },
  { what: 'a Buffer and a Date kept as they are', value: { when: new Date(0), bytes: Buffer.from('xy') } },
  { what: 'a cycle, cut', value: loop },
  { what: 'the same object twice, not a cycle', value: { a: shared, b: [shared, shared] } },
  {
    what: 'an object without prototype',
    value: Object.assign(Object.create(null) as object, { iban: 'DE', x: { ssn: 1 } }),
  },
  { what: 'the root an XML value', value: new XmlValue('<r/>', 'r') },
];

test('maskPayload gives what the recursive walk gave for ordinary values, with either mask and with or without the XML replacement', () => {
  const extra = new MaskSet(['iban']);
  for (const { what, value } of ordinary) {
    for (const mask of [GLOBAL_MASK, extra]) {
      assert.deepEqual(maskPayload(value, mask), recursiveMask(value, mask, false), `${what}, XML kept`);
      assert.deepEqual(
        maskPayload(value, mask, { xml: (x) => ({ _unrepresentable: x.root }) }),
        recursiveMask(value, mask, true),
        `${what}, XML replaced`,
      );
    }
  }
});

/** `depth` objects nested under `key` around `leaf`. */
function nestedUnder(key: string, depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { [key]: v };
  return v;
}

const deepCases: { what: string; value: unknown; masked?: unknown }[] = [
  { what: 'lists nested 10,000 deep', value: JSON.parse('['.repeat(10_000) + ']'.repeat(10_000)) },
  { what: 'objects nested 10,000 deep', value: nestedUnder('a', 10_000, 1) },
  {
    what: 'a shallow secret beside 50,000 levels',
    value: { password: 'p', deep: nestedUnder('a', 50_000, { token: 't' }) },
  },
  { what: 'objects nested one past the limit', value: nestedUnder('a', JSON_MAX_DEPTH + 1, 1) },
  {
    what: 'exactly at the limit: masked to the bottom',
    value: nestedUnder('a', JSON_MAX_DEPTH - 1, { token: 't' }),
    masked: nestedUnder('a', JSON_MAX_DEPTH - 1, { token: MASK }),
  },
  {
    what: 'a deep value under a masked field is never walked',
    value: { secret: nestedUnder('a', 10_000, 1) },
    masked: { secret: MASK },
  },
];

test('maskPayload walks any depth without recursion: deeper than the limit is refused with NestingTooDeepError, never a RangeError', () => {
  for (const c of deepCases) {
    if (c.masked !== undefined) {
      assert.deepEqual(maskPayload(c.value), c.masked, c.what);
      continue;
    }
    assert.throws(
      () => maskPayload(c.value),
      (err: unknown) => err instanceof NestingTooDeepError && /nests deeper than 128 levels/.test(err.message),
      c.what,
    );
  }
});

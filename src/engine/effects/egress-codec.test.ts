import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JSON_MAX_DEPTH } from '../../common/json-depth.js';
import { decodeResponse, DecodeProblem } from './egress-codec.js';

const nested = (depth: number) => Buffer.from('['.repeat(depth) + ']'.repeat(depth));

const cases: { what: string; body: Buffer; nests?: number; refused?: RegExp }[] = [
  { what: 'an ordinary document', body: Buffer.from('{"price": 12.5, "items": [1, 2]}'), nests: 2 },
  { what: 'JSON nested exactly to the limit', body: nested(JSON_MAX_DEPTH), nests: JSON_MAX_DEPTH },
  { what: 'JSON nested one past the limit', body: nested(JSON_MAX_DEPTH + 1), refused: /nests deeper than 128 levels/ },
  { what: 'JSON nested 10,000 deep', body: nested(10_000), refused: /nests deeper than 128 levels/ },
  { what: 'JSON that does not parse', body: Buffer.from('{"a":'), refused: /does not parse as JSON/ },
];

test('a backend JSON answer nests at most as deep as a request body may, or the decode fails', () => {
  for (const c of cases) {
    if (c.refused !== undefined) {
      assert.throws(
        () => decodeResponse(c.body, 'application/json', 1_048_576),
        (e: unknown) => e instanceof DecodeProblem && c.refused!.test(e.message),
        c.what,
      );
      continue;
    }
    let v = decodeResponse(c.body, 'application/json; charset=utf-8', 1_048_576);
    let depth = 0;
    while (v !== null && typeof v === 'object') {
      depth++;
      v = Array.isArray(v) ? v[0] : (Object.values(v).find((x) => typeof x === 'object') ?? null);
    }
    assert.equal(depth, c.nests, c.what);
  }
  assert.equal(
    decodeResponse(nested(10_000), 'text/plain', 1_048_576),
    '['.repeat(10_000) + ']'.repeat(10_000),
    'text is never parsed',
  );
});

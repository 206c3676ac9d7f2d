import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GLOBAL_MASK_FIELDS, MaskSet, maskPayload, stripCredentialHeaders } from './mask.js';

test('the global list holds exactly 25 distinct names', () => {
  assert.equal(GLOBAL_MASK_FIELDS.length, 25);
  assert.equal(new Set(GLOBAL_MASK_FIELDS).size, 25);
});

test('masked fields are replaced at any depth, case-insensitively, inside lists too', () => {
  const input = { user: { Password: 'p', profile: { API_KEY: 'k', name: 'n' } }, list: [{ token: 't' }, { ok: 1 }], 'Set-Cookie': 'c' };
  const out = maskPayload(input);
  assert.deepEqual(out, { user: { Password: '***', profile: { API_KEY: '***', name: 'n' } }, list: [{ token: '***' }, { ok: 1 }], 'Set-Cookie': '***' });
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
    stripCredentialHeaders({ Authorization: 'a', 'set-cookie': 'b', Cookie: 'c', 'WWW-Authenticate': 'd', 'proxy-authorization': 'e', 'x-ok': 'f' }),
    { 'x-ok': 'f' },
  );
});

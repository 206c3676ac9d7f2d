import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SvcError } from '../../common/errors.js';
import { sha256Hex } from '../../common/digest.js';
import { openDb } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteKeysStore } from '../../store/sqlite/sqlite-keys-store.js';
import { SqliteTenantsStore } from '../../store/sqlite/sqlite-tenants-store.js';
import {
  listAllApiKeys,
  parseExpiresAt,
  parseFlows,
  parseList,
  parseRateLimit,
  parseScopes,
  rateLimitBurst,
} from './keys.js';

describe('parseExpiresAt', () => {
  const accepted: [string, string][] = [
    ['2030-01-31', '2030-01-31T23:59:59Z'],
    ['2028-02-29', '2028-02-29T23:59:59Z'],
    ['2030-06-15T08:30:00Z', '2030-06-15T08:30:00Z'],
    ['2030-12-31T23:59:59Z', '2030-12-31T23:59:59Z'],
    ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00Z'],
    [' 2030-01-31 ', '2030-01-31T23:59:59Z'],
  ];
  for (const [input, stored] of accepted) {
    it(`reads "${input}" as ${stored}`, () => assert.equal(parseExpiresAt(input), stored));
  }

  const offsets = [
    '2030-01-01T10:00:00+02:00',
    '2030-01-01T10:00:00-05:00',
    '2030-01-01T10:00:00+0200',
    '2030-01-01T10:00+01:00',
    '2030-01-01T10:00:00.5+00:00',
  ];
  for (const input of offsets) {
    it(`refuses the offset in "${input}" and says so`, () => {
      assert.throws(
        () => parseExpiresAt(input),
        (err: unknown) => err instanceof SvcError && /timezone offset/.test(err.message) && /UTC/.test(err.message),
      );
    });
  }

  const invalid = [
    '2030-02-30',
    '2029-02-29',
    '2030-13-01',
    '2030-00-10',
    '2030-04-31',
    '2030-01-01T24:00:00Z',
    '2030-01-01T12:60:00Z',
    '2030-01-01T12:00:60Z',
    '2030-01-01T12:00:00',
    '2030-01-01T12:00:00z',
    '2030-01-01T12:00:00.123Z',
    '2030-1-1',
    '0000-01-01',
    'tomorrow',
    '',
    '1893456000',
  ];
  for (const input of invalid) {
    it(`refuses "${input}" naming the accepted forms`, () => {
      assert.throws(
        () => parseExpiresAt(input),
        (err: unknown) =>
          err instanceof SvcError && err.code === 'SVC_ERR_INVALID_INPUT' && /YYYY-MM-DD/.test(err.message),
      );
    });
  }
});

describe('parseRateLimit', () => {
  it('accepts positive whole and fractional rates', () => {
    assert.equal(parseRateLimit('5'), 5);
    assert.equal(parseRateLimit('0.5'), 0.5);
    assert.equal(parseRateLimit('2.'), 2);
    assert.equal(parseRateLimit('.25'), 0.25);
  });
  for (const bad of ['0', '0.0', '-1', 'abc', '', '1e3', 'Infinity', 'NaN', '5rps', '1,5']) {
    it(`refuses "${bad}"`, () => assert.throws(() => parseRateLimit(bad), /positive number/));
  }
  it('gives a burst of twice the rate', () => assert.equal(rateLimitBurst(5), 10));
});

describe('list flags', () => {
  it('splits, trims, drops empties and duplicates, keeps order', () =>
    assert.deepEqual(parseList(' b, a,,b ,c'), ['b', 'a', 'c']));
  it('defaults scopes to *', () => assert.deepEqual(parseScopes(undefined), ['*']));
  it('refuses a --scopes that names nothing', () => assert.throws(() => parseScopes(' , '), /names no scope/));
  it('reads an empty --flows as every flow', () => assert.deepEqual(parseFlows(''), []));
  it('refuses a flow that breaks the name rule, naming it', () =>
    assert.throws(() => parseFlows('orders,Bad'), /flow "Bad"/));
});

describe('listAllApiKeys', () => {
  it("gives every tenant (for the form) and every tenant's keys with their status, tenant by tenant", async () => {
    const db = openDb(':memory:', registryMigrations);
    const deps = { tenants: new SqliteTenantsStore(db), keys: new SqliteKeysStore(db) };
    for (const id of ['beta', 'acme', 'idle'])
      deps.tenants.create({ id, displayName: id, authMethods: ['api_key'], createdAt: '2026-01-01T00:00:00Z' });
    const key = (tenant: string, label: string, expiresAt: string | null) =>
      deps.keys.create({
        tenant,
        label,
        keyHash: sha256Hex(label),
        scopes: ['*'],
        flows: [],
        expiresAt,
        rateLimit: null,
        createdAt: '2026-01-01T00:00:00Z',
      });
    key('beta', 'b1', null);
    key('acme', 'a1', '2026-01-02T00:00:00Z');
    const revoked = key('acme', 'a2', null);
    deps.keys.revoke(revoked.id, '2026-01-01T00:00:01Z');
    const all = await listAllApiKeys(deps, new Date('2026-06-01T00:00:00Z'));
    const order = deps.tenants.list().map((t) => t.id);
    assert.deepEqual(
      all.tenants.map((t) => t.id),
      order,
    );
    const byTenant = all.keys.map((k) => [k.row.tenant, k.row.label, k.status]);
    assert.deepEqual(
      byTenant,
      order.flatMap((t) =>
        (
          [
            ['acme', 'a1', 'expired'],
            ['acme', 'a2', 'revoked'],
            ['beta', 'b1', 'active'],
          ] as const
        ).filter(([tenant]) => tenant === t),
      ),
    );
  });
});

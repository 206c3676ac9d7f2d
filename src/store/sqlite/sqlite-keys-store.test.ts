import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDb } from './db.js';
import { SqliteKeysStore } from './sqlite-keys-store.js';
import { registryMigrations } from './migrations/registry.js';
import { SqliteTenantsStore } from './sqlite-tenants-store.js';
import { generateKey, hashKey, keyStatus } from '../contracts/index.js';

describe('keyStatus', () => {
  const now = new Date('2030-01-31T12:00:00Z');
  const cases: [string, { revokedAt: string | null; expiresAt: string | null }, Date, string][] = [
    ['no expiry, not revoked', { revokedAt: null, expiresAt: null }, now, 'active'],
    ['expiry in the future', { revokedAt: null, expiresAt: '2030-02-01T00:00:00Z' }, now, 'active'],
    ['expiry passed', { revokedAt: null, expiresAt: '2030-01-31T11:59:59Z' }, now, 'expired'],
    [
      'revoked wins over expired',
      { revokedAt: '2030-01-01T00:00:00Z', expiresAt: '2020-01-01T00:00:00Z' },
      now,
      'revoked',
    ],
    ['revoked, no expiry', { revokedAt: '2030-01-01T00:00:00Z', expiresAt: null }, now, 'revoked'],
    [
      'within the last valid second',
      { revokedAt: null, expiresAt: '2030-01-31T23:59:59Z' },
      new Date('2030-01-31T23:59:59.999Z'),
      'active',
    ],
    [
      'one second past the expiry instant',
      { revokedAt: null, expiresAt: '2030-01-31T23:59:59Z' },
      new Date('2030-02-01T00:00:00Z'),
      'expired',
    ],
    ['unreadable expiry fails closed', { revokedAt: null, expiresAt: 'garbage' }, now, 'expired'],
  ];
  for (const [what, row, at, status] of cases) {
    it(`${what}: ${status}`, () => assert.equal(keyStatus(row, at), status));
  }
});

describe('raw keys', () => {
  it('are svk_ and 32 hex characters, different every time', () => {
    const keys = new Set(Array.from({ length: 200 }, generateKey));
    assert.equal(keys.size, 200);
    for (const k of keys) assert.match(k, /^svk_[0-9a-f]{32}$/);
  });
  it('are stored as their hex SHA-256', () => {
    assert.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('SqliteKeysStore', () => {
  const setup = () => {
    const db = openDb(':memory:', registryMigrations);
    new SqliteTenantsStore(db).create({
      id: 'acme',
      displayName: 'Acme',
      authMethods: ['api_key'],
      createdAt: '2030-01-01T00:00:00Z',
    });
    return { db, keys: new SqliteKeysStore(db) };
  };
  const newKey = (raw: string) => ({
    tenant: 'acme',
    label: 'ci',
    keyHash: hashKey(raw),
    scopes: ['read'],
    flows: ['orders'],
    expiresAt: null,
    rateLimit: 2.5,
    createdAt: '2030-01-01T00:00:00Z',
  });

  it('finds a key by the hash of the raw key, and nothing by the raw key itself', () => {
    const { keys } = setup();
    assert.equal(keys.hasAnyKey(), false);
    const row = keys.create(newKey('svk_one'));
    assert.equal(keys.hasAnyKey(), true);
    assert.deepEqual(keys.findByHash(hashKey('svk_one')), row);
    assert.deepEqual(row.scopes, ['read']);
    assert.deepEqual(row.flows, ['orders']);
    assert.equal(row.rateLimit, 2.5);
    assert.equal(keys.findByHash('svk_one'), undefined);
    assert.equal(keys.findByHash(hashKey('svk_other')), undefined);
  });

  it('looks a key up through the unique index on key_hash', () => {
    const { db } = setup();
    const plan = db.prepare('EXPLAIN QUERY PLAN SELECT * FROM api_keys WHERE key_hash = ?').all('x') as {
      detail: string;
    }[];
    assert.match(plan.map((p) => p.detail).join(' '), /USING INDEX/);
  });

  it('revokes once: then already_revoked; an unknown id is not_found', () => {
    const { keys } = setup();
    const row = keys.create(newKey('svk_two'));
    assert.equal(keys.revoke(row.id, '2030-01-02T00:00:00Z'), 'revoked');
    assert.equal(keys.revoke(row.id, '2030-01-03T00:00:00Z'), 'already_revoked');
    assert.equal(keys.get(row.id)!.revokedAt, '2030-01-02T00:00:00Z');
    assert.equal(keys.revoke(999, '2030-01-03T00:00:00Z'), 'not_found');
  });

  it('lists only the tenant’s keys, oldest first', () => {
    const { db, keys } = setup();
    new SqliteTenantsStore(db).create({
      id: 'beta',
      displayName: 'Beta',
      authMethods: ['api_key'],
      createdAt: '2030-01-01T00:00:00Z',
    });
    keys.create(newKey('svk_a'));
    keys.create({ ...newKey('svk_b'), tenant: 'beta' });
    keys.create(newKey('svk_c'));
    assert.deepEqual(
      keys.list('acme').map((k) => k.keyHash),
      [hashKey('svk_a'), hashKey('svk_c')],
    );
  });
});

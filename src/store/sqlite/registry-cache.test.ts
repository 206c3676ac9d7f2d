import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { SqliteArtifactsStore } from './sqlite-artifacts-store.js';
import { openDb } from './db.js';
import { SqliteKeysStore } from './sqlite-keys-store.js';
import { registryMigrations } from './migrations/registry.js';
import { RegistryCache } from './registry-cache.js';
import { SqliteSettingsStore } from './sqlite-settings-store.js';
import { SqliteTenantsStore } from './sqlite-tenants-store.js';
import { SqliteTraceStore } from './sqlite-traces-store.js';

describe('RegistryCache', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cache-'));
  const file = join(dir, 'registry.db');
  const server = openDb(file, registryMigrations);
  const operator = openDb(file, registryMigrations); // another connection, as an operator command would be
  const repos = (db: typeof server) => ({
    keys: new SqliteKeysStore(db),
    tenants: new SqliteTenantsStore(db),
    artifacts: new SqliteArtifactsStore(db),
    traces: new SqliteTraceStore(db),
    settings: new SqliteSettingsStore(db),
  });
  const cache = new RegistryCache(server, repos(server));
  const op = repos(operator);
  after(() => {
    cache.close();
    server.close();
    operator.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers from memory until another connection commits, then sees the change on the next turn', async () => {
    op.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: '2026-01-01T00:00:00Z' });
    await nextTurn();
    assert.equal(cache.tenant('acme')?.status, 'active');
    op.tenants.setStatus('acme', 'disabled');
    // Same turn: the version was already checked, the cached answer stands.
    assert.equal(cache.tenant('acme')?.status, 'active');
    await nextTurn();
    assert.equal(cache.tenant('acme')?.status, 'disabled');
  });

  it('a revoked key is seen on the next turn', async () => {
    const row = op.keys.create({
      tenant: 'acme',
      label: 'k',
      keyHash: 'h'.repeat(64),
      scopes: ['*'],
      flows: [],
      expiresAt: null,
      rateLimit: null,
      createdAt: '2026-01-01T00:00:00Z',
    });
    await nextTurn();
    assert.equal(cache.findKeyByHash('h'.repeat(64))?.revokedAt, null);
    op.keys.revoke(row.id, '2026-01-02T00:00:00Z');
    await nextTurn();
    assert.equal(cache.findKeyByHash('h'.repeat(64))?.revokedAt, '2026-01-02T00:00:00Z');
  });

  it('a setting changed by an operator is read on the next turn', async () => {
    assert.equal(cache.setting('max_message_bytes'), 1_048_576);
    op.settings.set('max_message_bytes', 2048);
    await nextTurn();
    assert.equal(cache.setting('max_message_bytes'), 2048);
  });

  it('unknown keys are not cached', async () => {
    await nextTurn();
    assert.equal(cache.findKeyByHash('f'.repeat(64)), undefined);
    op.keys.create({
      tenant: 'acme',
      label: 'late',
      keyHash: 'f'.repeat(64),
      scopes: ['*'],
      flows: [],
      expiresAt: null,
      rateLimit: null,
      createdAt: '2026-01-01T00:00:00Z',
    });
    await nextTurn();
    assert.equal(cache.findKeyByHash('f'.repeat(64))?.label, 'late');
  });
});

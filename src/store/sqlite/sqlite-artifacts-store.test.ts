import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IntegrityError } from '../../common/errors.js';
import { SqliteArtifactsStore, tenantStatus } from './sqlite-artifacts-store.js';
import { openDb } from './db.js';
import { registryMigrations } from './migrations/registry.js';
import { DuplicateVersionError } from '../contracts/index.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-artifacts-'));
const db = openDb(join(dir, 'registry.db'), registryMigrations);
const repo = new SqliteArtifactsStore(db);
const h = (s: string) => createHash('sha256').update(s).digest('hex');
test.after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const pub = (version: string, bytes: string, at: string) =>
  repo.publish({ tenant: 't', name: 'f', version, bytes, hash: h(bytes), createdAt: at });

test('publishing moves latest and keeps every older version', () => {
  pub('1', '{"a":1}', '2024-01-01T00:00:00Z');
  pub('2', '{"a":2}', '2024-01-02T00:00:00Z');
  assert.deepEqual(repo.resolveLatest('t', 'f'), {
    version: '2',
    hash: h('{"a":2}'),
    created_at: '2024-01-02T00:00:00Z',
  });
  assert.deepEqual(
    repo.listVersions('t', 'f').map((v) => [v.version, v.latest]),
    [
      ['1', false],
      ['2', true],
    ],
  );
  assert.equal(repo.getByVersion('t', 'f', '1')?.hash, h('{"a":1}'));
  assert.deepEqual(
    repo.listLatest().map((r) => [r.tenant, r.name, r.version]),
    [['t', 'f', '2']],
  );
  assert.equal(repo.resolveLatest('t', 'nope'), undefined);
});

test('a duplicate version fails and changes nothing', () => {
  assert.throws(() => pub('1', '{"a":3}', '2024-01-03T00:00:00Z'), DuplicateVersionError);
  assert.equal(repo.resolveLatest('t', 'f')?.version, '2');
  assert.equal(repo.getArtifact(h('{"a":3}')), undefined);
});

test('artifacts are verified on every read; a mismatch is an IntegrityError', () => {
  const hash = h('{"a":2}');
  assert.equal(repo.getArtifact(hash)?.toString(), '{"a":2}');
  db.prepare('UPDATE artifacts SET bytes = ? WHERE hash = ?').run(Buffer.from('{"a":666}'), hash);
  assert.throws(() => repo.getArtifact(hash), IntegrityError);
});

test('publishing bytes that do not match their hash is refused', () => {
  assert.throws(
    () => repo.publish({ tenant: 't', name: 'g', version: '1', bytes: 'x', hash: h('y'), createdAt: 'now' }),
    IntegrityError,
  );
  assert.equal(repo.resolveLatest('t', 'g'), undefined);
});

test('tenantStatus reads the tenants table', () => {
  db.prepare(
    "INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ('acme', 'Acme', 'disabled', '[\"api_key\"]', 'x')",
  ).run();
  assert.equal(tenantStatus(db, 'acme'), 'disabled');
  assert.equal(tenantStatus(db, 'nobody'), undefined);
});

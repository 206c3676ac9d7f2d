import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '../../../../src/common/digest.js';
import { freshPgSchema, PG_TEST_URL, type PgSchema } from '../../../helpers/pg.js';
import { TcpProxy } from '../../../helpers/tcp-proxy.js';
import { waitFor } from '../../../helpers/wait.js';
import { PgRegistryMirror, pruneRegistryChanges } from '../../../../src/store/pg/pg-registry-mirror.js';
import { openPgStore, type PgStore } from '../../../../src/store/pg/pg-store.js';

const T0 = '2026-01-02T03:04:05.000Z';
let schema: PgSchema;
let writer: PgStore; // another node's connection: the changes the mirror must pick up
let reader: PgStore;
let mirror: PgRegistryMirror;
const key = (h: string) => ({
  tenant: 'acme',
  label: h,
  keyHash: h.padEnd(64, '0'),
  scopes: ['*'],
  flows: [],
  expiresAt: null,
  rateLimit: null,
  createdAt: T0,
});
const writerSeq = async () =>
  (await writer.db.query<{ s: number }>('SELECT max(seq)::bigint AS s FROM registry_changes')).rows[0]!.s;
const art = (text: string) => ({ bytes: text, hash: sha256Hex(Buffer.from(text)) });

before(async () => {
  schema = await freshPgSchema();
  writer = await openPgStore(schema.url);
  await writer.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
  await writer.keys.create(key('a'));
  await writer.artifacts.publish({ tenant: 'acme', name: 'orders', version: '1', ...art('{"v":1}'), createdAt: T0 });
  reader = await openPgStore(schema.url);
  // A poll far apart, so the tests below see what LISTEN/NOTIFY alone delivers.
  mirror = await PgRegistryMirror.open(reader.db, { pollIntervalMs: 60_000, maxStaleMs: 120_000 });
});

after(async () => {
  mirror.close();
  await writer.close();
  await reader.close();
  await schema.drop();
});

test('the copy loaded at start answers every read from memory', () => {
  assert.equal(mirror.findKeyByHash('a'.padEnd(64, '0'))?.label, 'a');
  assert.equal(mirror.findKeyByHash('b'.padEnd(64, '0')), undefined);
  assert.equal(mirror.tenant('acme')?.status, 'active');
  assert.equal(mirror.resolveLatest('acme', 'orders')?.version, '1');
  assert.equal(mirror.getArtifact(art('{"v":1}').hash)?.toString(), '{"v":1}');
  assert.deepEqual(
    mirror.listLatest().map((l) => `${l.tenant}/${l.name}@${l.version}`),
    ['acme/orders@1'],
  );
  assert.equal(mirror.traceEnabled('acme', 'orders'), false);
});

test('changes made by another node arrive by notification, within a second', async () => {
  const started = performance.now();
  const b = await writer.keys.create(key('b'));
  await waitFor('new key seen', () => mirror.findKeyByHash(b.keyHash) !== undefined, 1000, 5);
  await writer.keys.revoke(b.id, T0);
  await waitFor('revocation seen', () => mirror.findKeyByHash(b.keyHash)?.revokedAt === T0, 1000, 5);
  await writer.tenants.setStatus('acme', 'disabled');
  await waitFor('tenant disabled seen', () => mirror.tenant('acme')?.status === 'disabled', 1000, 5);
  await writer.tenants.setStatus('acme', 'active');
  await writer.artifacts.publish({ tenant: 'acme', name: 'orders', version: '2', ...art('{"v":2}'), createdAt: T0 });
  await waitFor('new latest seen', () => mirror.resolveLatest('acme', 'orders')?.version === '2', 1000, 5);
  assert.equal(mirror.getArtifact(art('{"v":2}').hash)?.toString(), '{"v":2}');
  assert.equal(mirror.getArtifact(art('{"v":1}').hash), undefined, 'an artifact no latest points at is let go');
  await writer.traces.set('acme', 'orders', true, T0);
  await waitFor('trace flag seen', () => mirror.traceEnabled('acme', 'orders'), 1000, 5);
  await writer.settings.set('log_retention_days', 5);
  await waitFor('setting seen', () => mirror.setting('log_retention_days') === 5, 1000, 5);
  assert.ok(performance.now() - started < 5000);
});

test('two flows sharing one artifact: moving one keeps the bytes for the other', async () => {
  const shared = art('{"shared":true}');
  await writer.artifacts.publish({ tenant: 'acme', name: 'x', version: '1', ...shared, createdAt: T0 });
  await writer.artifacts.publish({ tenant: 'acme', name: 'y', version: '1', ...shared, createdAt: T0 });
  await writer.artifacts.publish({ tenant: 'acme', name: 'x', version: '2', ...art('{"x":2}'), createdAt: T0 });
  await waitFor('x moved', () => mirror.resolveLatest('acme', 'x')?.version === '2', 1000, 5);
  assert.equal(mirror.getArtifact(shared.hash)?.toString(), '{"shared":true}');
});

test('more changes than one refresh reads: the copy is reloaded whole and is right', async () => {
  const small = await PgRegistryMirror.open(reader.db, {
    pollIntervalMs: 60_000,
    maxStaleMs: 120_000,
    maxChangesPerRefresh: 3,
  });
  try {
    const made = [];
    for (const h of ['c1', 'c2', 'c3', 'c4', 'c5']) made.push(await writer.keys.create(key(h)));
    await small.refresh();
    for (const k of made) assert.equal(small.findKeyByHash(k.keyHash)?.id, k.id);
    assert.equal(small.seq, await writerSeq());
  } finally {
    small.close();
  }
});

test('a pruned change log: a copy older than the horizon is read whole again, and is right', async () => {
  const behind = await PgRegistryMirror.open(reader.db, { pollIntervalMs: 60_000, maxStaleMs: 120_000 });
  try {
    const k = await writer.keys.create(key('p1'));
    await writer.keys.revoke(k.id, T0);
    assert.ok((await pruneRegistryChanges(writer.db, 0)) >= 2);
    assert.equal((await writer.db.query('SELECT count(*)::int AS n FROM registry_changes')).rows[0]!.n, 0);
    await behind.refresh();
    assert.equal(behind.findKeyByHash(k.keyHash)?.revokedAt, T0);
  } finally {
    behind.close();
  }
});

test('a lost database: reads throw once the copy is stale, and recover without a restart', async () => {
  const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(PG_TEST_URL).port || 5432));
  const url = new URL(schema.url);
  url.port = String(proxy.port);
  url.hostname = '127.0.0.1';
  const behind = await openPgStore(url.toString(), { connectTimeoutMs: 500 });
  const errors: unknown[] = [];
  const m = await PgRegistryMirror.open(behind.db, {
    pollIntervalMs: 50,
    maxStaleMs: 400,
    onError: (e) => errors.push(e),
  });
  try {
    assert.equal(m.tenant('acme')?.id, 'acme');
    await proxy.cut();
    await waitFor(
      'reads refused',
      () => {
        try {
          m.tenant('acme');
          return false;
        } catch (err) {
          return (err as Error).name === 'StorageUnavailableError';
        }
      },
      3000,
      20,
    );
    assert.ok(errors.length > 0);
    // Meanwhile a key is revoked: the first answer after the return must already know it.
    const c = await writer.keys.create(key('d1'));
    await writer.keys.revoke(c.id, T0);
    await proxy.restore();
    await waitFor(
      'reads answered again',
      () => {
        try {
          return m.findKeyByHash(c.keyHash)?.revokedAt === T0;
        } catch {
          return false;
        }
      },
      5000,
      20,
    );
  } finally {
    m.close();
    await behind.close();
    await proxy.close();
  }
});

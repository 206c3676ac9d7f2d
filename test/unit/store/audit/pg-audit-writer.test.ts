import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPgSchema, PG_TEST_URL, type PgSchema } from '../../../helpers/pg.js';
import { TcpProxy } from '../../../helpers/tcp-proxy.js';
import { PgAuditWriter } from '../../../../src/store/audit/pg-audit-writer.js';
import { openPgStore, type PgStore } from '../../../../src/store/pg/pg-store.js';

let schema: PgSchema;
const open: PgStore[] = [];
const store = async (url = schema.url) => {
  const s = await openPgStore(url, { maxConnections: 3, connectTimeoutMs: 500 });
  open.push(s);
  return s;
};

before(async () => (schema = await freshPgSchema()));
after(async () => {
  for (const s of open) await s.close();
  await schema.drop();
});

test('three nodes appending to one tenant at once build one chain that verifies', async () => {
  const nodes = await Promise.all([store(), store(), store()]);
  const writers = nodes.map((n) => new PgAuditWriter(n.db, { flushIntervalMs: 2 }));
  for (let i = 0; i < 300; i++)
    writers[i % 3]!.append({ tenant: 'acme', eventType: 'queue.message.enqueued', payload: { i } });
  await Promise.all(writers.map((w) => w.close()));
  const v = await nodes[0]!.audit.verify('acme');
  assert.equal(v.ok, true);
  assert.equal(v.count, 300);
});

test('while the database is away entries are kept, and written once it is back', async () => {
  const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(PG_TEST_URL).port || 5432));
  const url = new URL(schema.url);
  url.port = String(proxy.port);
  const behind = await store(url.toString());
  const errors: string[] = [];
  const w = new PgAuditWriter(behind.db, { flushIntervalMs: 2, retryMs: 50, onError: (m) => errors.push(m) });
  try {
    await proxy.cut();
    for (let i = 0; i < 20; i++) w.append({ tenant: 'away', eventType: 'tenant.registered', payload: { i } });
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(errors.length > 0);
    assert.equal(w.queuedEntries, 20);
    await proxy.restore();
    await w.flush();
    assert.equal(w.queuedEntries, 0);
    const direct = await store();
    const v = await direct.audit.verify('away');
    assert.deepEqual([v.ok, v.count], [true, 20]);
  } finally {
    await w.close(100);
    await proxy.close();
  }
});

/**
 * The PostgreSQL appender commits each message with its audit entry (its receipt) in one
 * transaction, the queue rows and the audit heads locked in one order. Appends of one turn go in
 * one batch even across queues and tenants: the last queue's statement locks every tenant's head,
 * so a batch over two tenants' queues still gives each message exactly one entry, on the right
 * chain, and both chains verify. And two nodes appending to the same queues at once (each node's
 * batches taking the same locks) never deadlock.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openStore, type Stores } from '../src/storage/index.js';
import { freshPgSchema, type PgSchema } from './helpers/pg.js';

const QUEUES = [
  { tenant: 'acme', flow: 'orders' },
  { tenant: 'acme', flow: 'refunds' },
  { tenant: 'globex', flow: 'orders' },
] as const;

/** An append of `tenant/flow` whose receipt names the message id the batch drew for it. */
function appendWithReceipt(store: Stores, tenant: string, flow: string, n: number) {
  return store.queues.append(tenant, flow, {
    correlationId: `${tenant}-${flow}-${n}`,
    payload: { n },
    receipt: (id: number) => ({
      tenant,
      eventType: 'queue.message.enqueued',
      correlationId: `${tenant}-${flow}-${n}`,
      payload: { flow, id },
    }),
  });
}

describe('PostgreSQL appends and their receipts, across queues and tenants', () => {
  let schema: PgSchema;
  const stores: Stores[] = [];
  after(async () => {
    for (const s of stores) await s.close();
    await schema?.drop();
  });

  it('a batch over three queues of two tenants: one entry per message, on its own chain, and both chains verify', async () => {
    schema = await freshPgSchema('svcrcpt');
    const store = await openStore(schema.url, { pg: { maxConnections: 4 } });
    stores.push(store);
    assert.equal(store.queues.receipts, 'with-message');
    // All in one turn: the appender gathers them into one transaction.
    const appended = await Promise.all(
      QUEUES.flatMap((q) => Array.from({ length: 20 }, (_, n) => appendWithReceipt(store, q.tenant, q.flow, n))),
    );
    assert.equal(appended.length, 60);
    for (const tenant of ['acme', 'globex']) {
      const verified = await store.audit.verify(tenant);
      assert.equal(verified.ok, true);
      assert.equal(verified.count, tenant === 'acme' ? 40 : 20);
      const entries = await store.audit.latest(tenant, 1000);
      const keys = entries.map((e) => `${JSON.parse(e.payload).flow}#${JSON.parse(e.payload).id}`);
      assert.equal(new Set(keys).size, keys.length, 'no message has two entries');
      assert.ok(
        entries.every((e) => e.correlationId.startsWith(`${tenant}-`)),
        'each entry on its own tenant’s chain',
      );
    }
    // Every message id of every queue has its entry.
    for (const q of QUEUES) {
      const ids = await store.queues.heldIds(q.tenant, q.flow);
      assert.equal(ids.length, 20);
      const entries = await store.audit.latest(q.tenant, 1000);
      const entered = new Set(
        entries.filter((e) => JSON.parse(e.payload).flow === q.flow).map((e) => JSON.parse(e.payload).id as number),
      );
      assert.deepEqual(
        [...ids].sort((a, b) => a - b),
        [...entered].sort((a, b) => a - b),
      );
    }
  });

  it('two nodes appending to the same queues at once: no deadlock, every message entered once, the chains verify', async () => {
    const second = await openStore(schema.url, { pg: { maxConnections: 4 } });
    stores.push(second);
    const first = stores[0]!;
    const rounds = 10;
    for (let round = 0; round < rounds; round++) {
      // Opposite orders on the two nodes: only the appender's one lock order keeps them from waiting on each other.
      await Promise.all([
        ...QUEUES.map((q) => appendWithReceipt(first, q.tenant, q.flow, 100 + round)),
        ...[...QUEUES].reverse().map((q) => appendWithReceipt(second, q.tenant, q.flow, 200 + round)),
      ]);
    }
    for (const tenant of ['acme', 'globex']) {
      const verified = await first.audit.verify(tenant);
      assert.equal(verified.ok, true);
      const perTenantQueues = QUEUES.filter((q) => q.tenant === tenant).length;
      assert.equal(verified.count, perTenantQueues * (20 + 2 * rounds));
    }
  });
});

/**
 * Black-box, on either store (issue 33, item 8): kill -9 while a worker drains a backlog, three
 * times, then let a last server finish. Every message is delivered, and every delivery the backend
 * saw has its `queue.message.processed` audit entry: a delivery's progress (the checkpoint on files,
 * the deleted row on PostgreSQL) is made durable only after its entry is committed, so a kill
 * leaves it to be delivered again, never passed without its entry.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DELIVER_STEP, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { flowSource, tenantWithKey, writeBacklog } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';
import { makeSandbox, startServer } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const MESSAGES = 800;
const KILLS_AT = [120, 320, 520];

describe('a kill -9 in the middle of a drain', () => {
  const sandbox = makeSandbox();
  let backend: DeliveryBackend;

  before(async () => {
    tenantWithKey(sandbox);
    deployFlow(sandbox, flowSource('drain', ['effects: [http_egress]'], DELIVER_STEP));
    await writeBacklog(
      sandbox,
      [{ tenant: 'acme', flow: 'drain', message: (i) => ({ correlationId: `d-${i}`, payload: { n: i } }) }],
      MESSAGES,
    );
    backend = await startDeliveryBackend();
  });
  after(async () => {
    await backend?.close();
    sandbox.cleanup();
  });

  it('delivers every message, and every delivery has its queue.message.processed entry', async (t) => {
    const env = { BACKEND_URL: backend.url };
    for (const at of KILLS_AT) {
      const server = await startServer(sandbox, [], env);
      await waitFor(`${at} delivered`, () => backend.delivered.size >= at, 30_000, 1);
      await server.kill9();
    }
    const last = await startServer(sandbox, [], env);
    try {
      await waitFor('all delivered', () => backend.delivered.size === MESSAGES, 60_000, 50);
    } finally {
      await last.stop();
    }
    const processed = new Set(
      storeRows<{ correlation_id: string }>(
        sandbox,
        'audit',
        "SELECT correlation_id FROM audit_entries WHERE tenant = 'acme' AND event_type = 'queue.message.processed'",
      ).map((r) => r.correlation_id),
    );
    const unaudited = [...backend.delivered.keys()].filter((c) => !processed.has(c));
    const again = [...backend.delivered.values()].reduce((n, d) => n + d - 1, 0);
    t.diagnostic(`${MESSAGES} delivered, ${again} delivered again after a kill, ${unaudited.length} without an entry`);
    assert.deepEqual(unaudited, []);
  });
});

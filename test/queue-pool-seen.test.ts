/**
 * Black-box, on either store: a queue waiting for a worker slot is seen where an operator looks,
 * `/metrics` (how many wait, and how long each has) and the UI's Queues page (the Worker column),
 * and it is served once the slot is given back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { groupedDeliverStep, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { enqueue, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlows, flow, setSystemConfig } from './helpers/registry-setup.js';
import { sample } from './helpers/metrics-text.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';
import { waitFor } from './helpers/wait.js';

const PASSWORD = 'a long enough passphrase 42';
const SLOW = 8;
const HOLD_MS = 400;

describe('a queue waiting for a worker slot', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: DeliveryBackend;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    deployFlows(sandbox, [
      flow('acme', 'slow', 'effects: [http_egress]', groupedDeliverStep('acme')),
      flow('acme', 'waiting', 'effects: [http_egress]', groupedDeliverStep('acme')),
    ]);
    // One slot, and a turn longer than the slow queue's work: the other queue waits until it is done.
    setSystemConfig(sandbox, { max_queue_workers: 1, queue_worker_turn_ms: 60_000 });
    backend = await startDeliveryBackend({ holdMs: HOLD_MS });
    server = await startServer(sandbox, ['--metrics'], {
      BACKEND_URL: backend.url,
      SVC_UI_ADMIN_USER: 'admin',
      SVC_UI_ADMIN_PASS: PASSWORD,
    });
  });
  after(async () => {
    await server?.stop();
    await backend?.close();
    sandbox.cleanup();
  });

  it('is counted and timed in /metrics and named on the Queues page while it waits, then served', async () => {
    const cookie = await uiLogin(server.url, 'admin', PASSWORD);
    for (let i = 0; i < SLOW; i++)
      assert.equal((await enqueue(server.url, 'slow', '{}', { key, correlationId: `slow-${i}` })).status, 202);
    await waitFor('the slow queue served', () => backend.firstDelivered.length > 0);
    assert.equal((await enqueue(server.url, 'waiting', '{}', { key, correlationId: 'w-0' })).status, 202);
    await new Promise((r) => setTimeout(r, 600));

    const text = await (await fetch(`${server.url}/metrics`)).text();
    assert.equal(sample(text, 'svc_queues_waiting_for_worker'), 1, text);
    assert.equal(sample(text, 'svc_queue_workers_running'), 1);
    const waited = sample(text, 'svc_queue_waiting_for_worker_seconds{tenant="acme",flow="waiting"}');
    assert.ok(waited !== undefined && waited >= 0.5 && waited < 10, `waited ${waited} s`);
    assert.equal(sample(text, 'svc_queue_waiting_for_worker_seconds{tenant="acme",flow="slow"}'), undefined);

    const queuesPage = await (await fetch(`${server.url}/ui/queues`, { headers: { cookie } })).text();
    assert.match(
      queuesPage,
      /acme\/waiting<\/a><\/td>(?:\s*<td[^>]*>[^<]*<\/td>){4}\s*<td>waiting for a worker slot, \d+\.\d s<\/td>/,
    );

    await waitFor('the waiting queue served after the slow one', () => backend.delivered.get('w-0') === 1, 20_000);
    assert.equal(backend.maxInFlight.all, 1, 'one slot: one delivery at a time');
    assert.equal(backend.firstDelivered.at(-1), 'w-0', 'served once the slow queue gave its slot back');
    const after = await (await fetch(`${server.url}/metrics`)).text();
    assert.equal(sample(after, 'svc_queues_waiting_for_worker'), 0);
  });
});

/**
 * Black-box: max_queue_workers_per_tenant = 1 caps how many of one tenant's queues are served at
 * once, not another tenant's; the tenant's queues take turns at its one slot (a busy worker gives
 * it back after queue_worker_turn_ms while another of its queues waits), and every message is
 * delivered. A slow HTTP backend outside the service sees the calls in flight per tenant.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { groupedDeliverStep, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { tenantWithKey, writeBacklog } from './helpers/queue-flows.js';
import { createTenant, deployFlows, flow, setSystemConfig } from './helpers/registry-setup.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

const PER_QUEUE = 6;
const HOLD_MS = 100;
const slowFlow = (tenant: string, name: string) =>
  flow(tenant, name, 'effects: [http_egress]', groupedDeliverStep(tenant));

describe('max_queue_workers_per_tenant', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: DeliveryBackend;

  before(async () => {
    tenantWithKey(sandbox);
    createTenant(sandbox, 'beta');
    deployFlows(sandbox, [slowFlow('acme', 'ok'), slowFlow('acme', 'second'), slowFlow('beta', 'ok')]);
    setSystemConfig(sandbox, { max_queue_workers_per_tenant: 1, queue_worker_turn_ms: 250 });
    backend = await startDeliveryBackend({ holdMs: HOLD_MS });
    const queues = (
      [
        ['acme', 'ok'],
        ['acme', 'second'],
        ['beta', 'ok'],
      ] as const
    ).map(([tenant, flow]) => ({
      tenant,
      flow,
      message: (i: number) => ({ correlationId: `${tenant}-${flow}-${i}`, payload: { i } }),
    }));
    await writeBacklog(sandbox, queues, PER_QUEUE);
    server = await startServer(sandbox, [], { BACKEND_URL: backend.url });
  });
  after(async () => {
    await server?.stop();
    await backend?.close();
    sandbox.cleanup();
  });

  it("serves one of a tenant's queues at a time while another tenant is served beside it; its queues take turns", async () => {
    const all = PER_QUEUE * 3;
    await waitFor(`${all} deliveries`, () => backend.firstDelivered.length === all, 30_000, 20);
    assert.equal(backend.maxInFlight.byGroup.get('acme'), 1, 'one acme queue served at a time');
    assert.equal(backend.maxInFlight.byGroup.get('beta'), 1);
    assert.equal(backend.maxInFlight.all, 2, 'beta served beside acme');
    const order = backend.firstDelivered;
    const at = (id: string) => order.indexOf(id);
    // Took turns: each acme queue got the slot before the other had delivered everything.
    assert.ok(at('acme-second-0') < at(`acme-ok-${PER_QUEUE - 1}`), order.join(' '));
    assert.ok(at('acme-ok-0') < at(`acme-second-${PER_QUEUE - 1}`), order.join(' '));
    for (const q of ['acme-ok', 'acme-second', 'beta-ok'])
      assert.deepEqual(
        order.filter((id) => id.startsWith(`${q}-`)),
        Array.from({ length: PER_QUEUE }, (_, i) => `${q}-${i}`),
        `${q} in order`,
      );
    assert.deepEqual(
      [...backend.delivered.values()].filter((n) => n !== 1),
      [],
      'each delivered once',
    );
  });
});

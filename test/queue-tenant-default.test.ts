/** Black-box: with no max_queue_workers_per_tenant row, one tenant may have every queue max_queue_workers allows served at once. */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { groupedDeliverStep, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { enqueue, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlows, flow, setSystemConfig } from './helpers/registry-setup.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

/** One more than the catalogue default of both ceilings (4 per core, at most 64). */
const WORKERS = Math.min(4 * availableParallelism(), 64) + 1;

describe('max_queue_workers_per_tenant by default', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: DeliveryBackend;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    deployFlows(
      sandbox,
      Array.from({ length: WORKERS }, (_, i) =>
        flow('acme', `q${i}`, 'effects: [http_egress]', groupedDeliverStep('acme')),
      ),
    );
    setSystemConfig(sandbox, { max_queue_workers: WORKERS });
    // Each call held long enough for every queue's first delivery to be in flight together.
    backend = await startDeliveryBackend({ holdMs: 1500 });
    server = await startServer(sandbox, [], { BACKEND_URL: backend.url });
  });
  after(async () => {
    await server?.stop();
    await backend?.close();
    sandbox.cleanup();
  });

  it(`equals max_queue_workers: one tenant has ${WORKERS} queues served at once`, async () => {
    for (let i = 0; i < WORKERS; i++)
      assert.equal((await enqueue(server.url, `q${i}`, '{}', { key, correlationId: `m-${i}` })).status, 202);
    await waitFor(`${WORKERS} deliveries`, () => backend.firstDelivered.length === WORKERS, 20_000);
    assert.equal(backend.maxInFlight.byGroup.get('acme'), WORKERS);
  });
});

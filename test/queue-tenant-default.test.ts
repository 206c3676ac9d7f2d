/** Black-box: with no max_queue_workers_per_tenant row, one tenant may hold every worker max_queue_workers allows. */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { enqueue, tenantWithKey } from './helpers/queue-flows.js';
import { setSystemConfig } from './helpers/registry-setup.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

/** One more than the catalogue default of both ceilings (4 per core, at most 64). */
const WORKERS = Math.min(4 * availableParallelism(), 64) + 1;

describe('max_queue_workers_per_tenant by default', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    setSystemConfig(sandbox, { max_queue_workers: WORKERS });
    server = await startServer(sandbox);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it(`equals max_queue_workers: one tenant gets a worker on each of ${WORKERS} queues`, async () => {
    // Flows that are not deployed: each queue's worker drops its message with an operational error.
    for (let i = 1; i <= WORKERS; i++) assert.equal((await enqueue(server.url, `q${i}`, '{}', { key })).status, 202);
    const dropped = () =>
      new Set([...server.stderr().matchAll(/no flow 'acme\/(q\d+)' is deployed/g)].map((m) => m[1])).size;
    await waitFor(`${WORKERS} workers`, () => dropped() === WORKERS, 20_000).catch(() =>
      assert.fail(`only ${dropped()} of ${WORKERS} queues got a worker`),
    );
  });
});

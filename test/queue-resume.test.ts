/**
 * Black-box, on either store: a queue's backlog is served from the start of `svc serve`, with no
 * new submission (docs/queues.md, "Where we differ from the specification"). The backlog is written
 * through the library while no server runs, or left by a server killed with SIGKILL mid-drain; an
 * HTTP backend outside the service counts each message's deliveries and their order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DELIVER_STEP, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { flowSource, tenantWithKey, writeBacklog } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, startServer } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const BACKLOG = 1000;

const BACKLOG_FLOW = flowSource('backlog', ['effects: [http_egress]'], DELIVER_STEP);

describe('a backlog resumes at start, with no new submission', () => {
  const sandbox = makeSandbox();
  let backend: DeliveryBackend;

  before(async () => {
    tenantWithKey(sandbox);
    deployFlow(sandbox, BACKLOG_FLOW);
    backend = await startDeliveryBackend();
  });
  after(async () => {
    await backend.close();
    sandbox.cleanup();
  });

  /** Appends `ids` to acme/backlog through the library, while no server runs. */
  const writeIds = (ids: readonly string[]) =>
    writeBacklog(
      sandbox,
      [{ tenant: 'acme', flow: 'backlog', message: (i) => ({ correlationId: ids[i]!, payload: { id: ids[i] } }) }],
      ids.length,
    );

  const firstOf = (prefix: string) => backend.firstDelivered.filter((id) => id.startsWith(prefix));

  it(`${BACKLOG} messages written while no server ran are all delivered once, in order, after a start`, async () => {
    const ids = Array.from({ length: BACKLOG }, (_, i) => `w-${i}`);
    await writeIds(ids);
    const server = await startServer(sandbox, [], { BACKEND_URL: backend.url });
    try {
      await waitFor(`${BACKLOG} deliveries`, () => firstOf('w-').length === BACKLOG, 60_000, 50);
    } finally {
      await server.stop();
    }
    assert.deepEqual(firstOf('w-'), ids, 'in the order they were written');
    assert.deepEqual(
      ids.filter((id) => backend.delivered.get(id) !== 1),
      [],
      'each delivered exactly once',
    );
  });

  it(`a server killed with SIGKILL mid-drain: the next start delivers the rest, each at least once, in order`, async () => {
    const ids = Array.from({ length: BACKLOG }, (_, i) => `k-${i}`);
    await writeIds(ids);
    const first = await startServer(sandbox, [], { BACKEND_URL: backend.url });
    try {
      await waitFor('100 deliveries before the kill', () => firstOf('k-').length >= 100, 60_000, 1);
    } finally {
      await first.kill9();
    }
    const atKill = firstOf('k-').length;
    assert.ok(atKill < BACKLOG, `the kill came mid-drain (${atKill} of ${BACKLOG} delivered)`);
    const second = await startServer(sandbox, [], { BACKEND_URL: backend.url });
    try {
      await waitFor(`the other ${BACKLOG - atKill} deliveries`, () => firstOf('k-').length === BACKLOG, 60_000, 50);
    } finally {
      await second.stop();
    }
    assert.deepEqual(firstOf('k-'), ids, 'in the order they were written');
  });
});

/**
 * Black-box, on either store (issue 33, item 1): one tenant cannot stop another tenant's queues
 * or grow the disk without bound. A tenant's submissions past `max_queues_per_tenant` live queues
 * or `max_queue_bytes_per_tenant` bytes answer 507 naming the bound, write nothing, and are told
 * to the operator; an existing queue of the tenant still takes messages, another tenant is served.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DELIVER_STEP, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { events, OK_FLOW, tenantWithKey } from './helpers/queue-flows.js';
import { createKey, createTenant, deployFlows, flow, setSystemConfig } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const MAX_BYTES = 300_000;
const BODY_BYTES = 20_000;

describe('per-tenant queue bounds', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: DeliveryBackend;
  let acmeKey = '';
  let betaKey = '';

  const submit = async (tenant: string, key: string, name: string, body: string) => {
    const res = await fetch(`${server.url}/flows/${tenant}/${name}/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body,
    });
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  };

  before(async () => {
    acmeKey = tenantWithKey(sandbox);
    createTenant(sandbox, 'beta');
    betaKey = createKey(sandbox, 'beta');
    // beta's one slot is held by a delivery the backend does not answer: its other queues keep their messages.
    deployFlows(sandbox, [flow('beta', 'hold', 'effects: [http_egress]', DELIVER_STEP), OK_FLOW]);
    setSystemConfig(sandbox, {
      max_queue_workers_per_tenant: 1,
      max_queues_per_tenant: 3,
      max_queue_bytes_per_tenant: MAX_BYTES,
    });
    backend = await startDeliveryBackend({ holdMs: 60_000 });
    server = await startServer(sandbox, [], { BACKEND_URL: backend.url });
  });
  after(async () => {
    await server?.stop();
    await backend?.close();
    sandbox.cleanup();
  });

  it('past max_queues_per_tenant a new queue answers 507 and nothing is written; existing queues and other tenants go on', async () => {
    assert.equal((await submit('beta', betaKey, 'hold', '{}')).status, 202);
    await waitFor('the held delivery under way', () => backend.maxInFlight.all > 0);
    for (const name of ['n1', 'n2']) assert.equal((await submit('beta', betaKey, name, '{"x":1}')).status, 202);

    const refused = await submit('beta', betaKey, 'n3', '{"x":1}');
    assert.equal(refused.status, 507, refused.body);
    assert.match(refused.type ?? '', /^application\/json/);
    assert.deepEqual(JSON.parse(refused.body), {
      ok: false,
      error: "queue limit reached: tenant 'beta' has 3 queues (max_queues_per_tenant 3)",
    });
    // The neighbours: an existing queue still takes messages; another tenant is admitted and served.
    assert.equal((await submit('beta', betaKey, 'n1', '{"x":2}')).status, 202);
    assert.equal((await submit('acme', acmeKey, 'ok', '{"n":1}')).status, 202);
    await waitFor('acme served', () => events(sandbox, "event = 'queue_processed' AND flow = 'ok'").length === 1);

    const n3 = events(sandbox, "event = 'queue_enqueued' AND flow = 'n3'");
    assert.equal(n3.length, 0, 'the refused message was not written');
  });

  it('past max_queue_bytes_per_tenant a message answers 507, to any queue of the tenant', async () => {
    let accepted = 0;
    let refusal: { status: number; body: string } | undefined;
    for (let i = 0; i < 40 && refusal === undefined; i++) {
      // Random text: PostgreSQL cannot compress it, so a row takes about what the body says.
      const r = await submit(
        'beta',
        betaKey,
        'n1',
        JSON.stringify({ pad: randomBytes(BODY_BYTES * 0.75).toString('base64') }),
      );
      if (r.status === 202) accepted++;
      else refusal = r;
    }
    assert.ok(refusal !== undefined, 'a submission was refused');
    assert.equal(refusal.status, 507, refusal.body);
    assert.match(
      JSON.parse(refusal.body).error as string,
      /^queue storage limit reached: tenant 'beta' queues take \d+ bytes \(max_queue_bytes_per_tenant 300000\)$/,
    );
    assert.ok(
      accepted >= 5 && accepted <= MAX_BYTES / BODY_BYTES,
      `${accepted} messages of ${BODY_BYTES} bytes accepted`,
    );
    const again = await submit('beta', betaKey, 'n2', JSON.stringify({ pad: 'x'.repeat(BODY_BYTES) }));
    assert.equal(again.status, 507, "the bound is the tenant's, whichever of its queues");
    assert.equal((await submit('acme', acmeKey, 'ok', '{"n":2}')).status, 202, 'another tenant is not affected');

    await waitFor('the operator told', () =>
      /queue submission refused with 507/.test(server.output() + server.stderr()),
    );
    assert.match(server.output() + server.stderr(), /queue\(s\) wait for a worker slot/);
  });
});

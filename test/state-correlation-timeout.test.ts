/** Black-box: a timed-out correlation enqueues its compensating flow, which a queue worker then processes with the recorded state. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { events } from './helpers/queue-flows.js';
import { waitFor } from './helpers/wait.js';
import { createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type Sandbox, type ServerProcess } from './helpers/svc.js';

let sb: Sandbox;
let server: ServerProcess;

/** Deploys flow `name` of tenant demo. */
function deploy(name: string, head: string, body: string): void {
  deployFlow(sb, flow('demo', name, head, `# ${name}\n\n${body}`));
}

before(async () => {
  sb = makeSandbox();
  createTenant(sb, 'demo');
  deploy(
    'order',
    'correlation_open:\n  key: ctx.input.id\n  deadline_secs: 1\n  on_timeout: order-timeout\ncorrelation_state:\n  order_ref: ctx.input.id\n  amount: ctx.input.amount * 2\n',
    '## Step: accept\n```ntd\n{"accepted": "{{ ctx.input.id }}"}\n```\n',
  );
  // The compensating flow echoes its message, so its queue_processed row shows what it was given.
  deploy(
    'order-timeout',
    'log_level: full\n',
    '## Step: compensate\n```ntd\n{"order_ref": "{{ ctx.input.order_ref }}", "amount": "{{ ctx.input.amount }}"}\n```\n',
  );
  server = await startServer(sb, ['--no-auth'], { SVC_TEST_CORRELATION_RECONCILE_INTERVAL_MS: '200' });
});

after(async () => {
  await server?.stop();
  sb?.cleanup();
});

test('on timeout the on_timeout flow is enqueued and processed with the recorded correlation_state as its message and the opening correlation id', async () => {
  const cid = 'corr-timeout-1';
  const r = await fetch(`${server.url}/flows/demo/order/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-correlation-id': cid },
    body: JSON.stringify({ id: 'o-77', amount: 21 }),
  });
  assert.equal(r.status, 200, await r.text());
  const done = await waitFor(
    'queue_processed of order-timeout',
    () => events(sb, "event = 'queue_processed' AND flow = 'order-timeout'")[0],
  );
  assert.equal(done.outcome, 'succeeded');
  assert.equal(done.correlation_id, cid, 'the compensating message carries the row correlation id');
  // The state was evaluated when the correlation opened (amount * 2), not re-read from the request.
  assert.deepEqual(JSON.parse(done.payload!), { order_ref: 'o-77', amount: 42 });
  const enq = events(sb, "event = 'queue_enqueued' AND flow = 'order-timeout'");
  assert.equal(enq.length, 1, 'enqueued exactly once');
  assert.equal(enq[0]!.correlation_id, cid);
  assert.doesNotMatch(server.stderr(), /order-timeout.*(fail|error)/i, 'no enqueue failure was reported');
});

/**
 * `svc audit --verify` counts a tenant's queue entries against what they stand for (issue 33,
 * item 8), on either store: every message its queues hold has the entry of its acknowledgement,
 * and every delivery entry is of a message that has one. Messages written around the service
 * (through the queue library, as a crash that lost their entries would leave them) are named.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue, events, OK_FLOW, tenantWithKey, writeBacklog } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

describe('svc audit --verify: queue entries', () => {
  const sandbox = makeSandbox();
  let key = '';
  const verify = () => svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
  const serveUntilProcessed = async (n: number) => {
    const server = await startServer(sandbox, []);
    try {
      await waitFor(`${n} processed`, () => events(sandbox, "event = 'queue_processed'").length === n);
    } finally {
      await server.stop();
    }
    return server;
  };

  before(() => {
    key = tenantWithKey(sandbox);
    deployFlow(sandbox, OK_FLOW);
  });
  after(() => sandbox.cleanup());

  it('OK when every message and delivery has its entry', async () => {
    const server = await startServer(sandbox, []);
    try {
      for (let i = 0; i < 5; i++) assert.equal((await enqueue(server.url, 'ok', `{"n":${i}}`, { key })).status, 202);
      await waitFor('5 processed', () => events(sandbox, "event = 'queue_processed'").length === 5);
    } finally {
      await server.stop();
    }
    const r = verify();
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /audit chain of tenant acme: OK/);
    assert.match(
      r.stdout,
      /queue entries of tenant acme: OK \(\d+ held messages? and 5 deliveries, each with the entry of its acknowledgement\)/,
    );
  });

  it('names the messages held without their entry, then their deliveries, and exits 1', async () => {
    await writeBacklog(
      sandbox,
      [{ tenant: 'acme', flow: 'ok', message: (i) => ({ correlationId: `around-${i}`, payload: { n: 100 + i } }) }],
      2,
    );
    const held = verify();
    assert.equal(held.code, 1, held.stdout + held.stderr);
    assert.match(held.stdout, /audit chain of tenant acme: OK/, 'the chain itself is intact');
    assert.match(
      held.stdout,
      /queue entries of tenant acme: MISSING: 2 of \d+ held messages have no queue\.message\.enqueued entry \(ok: \d+, \d+\)/,
    );

    await serveUntilProcessed(7);
    const delivered = verify();
    assert.equal(delivered.code, 1, delivered.stdout + delivered.stderr);
    assert.match(delivered.stdout, /2 of 7 deliveries are of a message without one \(ok: \d+, \d+\)/);

    const json = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--json', '--db', sandbox.db]);
    assert.equal(json.code, 1);
    const parsed = JSON.parse(json.stdout) as { ok: boolean; queues: { ok: boolean; deliveries: number } };
    assert.equal(parsed.ok, false);
    assert.equal(parsed.queues.ok, false);
    assert.equal(parsed.queues.deliveries, 7);
  });
});

/** Black-box: max_queue_workers_per_tenant = 1 caps one tenant's queue workers, not another tenant's; /enqueue still answers 202. */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { queueWorkerHeld } from './helpers/lock-holders.js';
import { enqueue, events, OK_FLOW, tenantWithKey } from './helpers/queue-flows.js';
import { createKey, createTenant, deployFlow, setSystemConfig } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

describe('max_queue_workers_per_tenant', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let acmeKey = '';
  let betaKey = '';
  const processed = (where: string) => events(sandbox, `event = 'queue_processed' AND ${where}`);

  before(async () => {
    acmeKey = tenantWithKey(sandbox);
    deployFlow(sandbox, OK_FLOW);
    deployFlow(sandbox, OK_FLOW.replace('flow: ok', 'flow: second'));
    createTenant(sandbox, 'beta');
    deployFlow(sandbox, OK_FLOW.replace('tenant: acme', 'tenant: beta'));
    betaKey = createKey(sandbox, 'beta');
    setSystemConfig(sandbox, { max_queue_workers_per_tenant: 1 });
    server = await startServer(sandbox);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it("gives a tenant's second queue no worker (202 still answered) while another tenant still gets one", async () => {
    assert.equal((await enqueue(server.url, 'ok', '{"n": 1}', { key: acmeKey, correlationId: 'acme-ok' })).status, 202);
    await waitFor('acme/ok processed', () => processed("correlation_id = 'acme-ok'").length === 1);

    const second = await enqueue(server.url, 'second', '{"n": 2}', { key: acmeKey, correlationId: 'acme-second' });
    assert.equal(second.status, 202, second.text);

    const res = await fetch(`${server.url}/flows/beta/ok/enqueue`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${betaKey}`,
        'content-type': 'application/json',
        'x-correlation-id': 'beta-ok',
      },
      body: '{"n": 3}',
    });
    assert.equal(res.status, 202, await res.text());
    await waitFor('beta/ok processed', () => processed("correlation_id = 'beta-ok'").length === 1);

    // Past two worker polls (500 ms) the message of acme/second is still waiting in its queue.
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(processed("correlation_id = 'acme-second'").length, 0);
    if (sandbox.store === undefined)
      assert.ok(
        statSync(join(statePaths(sandbox.db).queuesDir, 'acme', 'second', 'segment.log')).size > 0,
        'the message is stored',
      );
    else
      assert.equal(
        storeRows(sandbox, 'registry', "SELECT id FROM queue_messages WHERE tenant = 'acme' AND flow = 'second'")
          .length,
        1,
        'the message is stored',
      );
    assert.equal(queueWorkerHeld(sandbox, 'acme', 'second'), false, 'no worker holds the queue');
    assert.equal(queueWorkerHeld(sandbox, 'beta', 'ok'), true, "another tenant's queue has its worker");
  });
});

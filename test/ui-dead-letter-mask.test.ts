/**
 * Black-box (issue 33, item 6): the Queues page shows a dead letter's payload through its flow's log
 * mask, as the event log does: a `password` (the global list) and a field the flow adds
 * (`log_extra_mask_fields`) are `***` for every role, the developer included; other fields show.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueue, events, flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';
import { waitFor } from './helpers/wait.js';

const PASSWORD = 'a long enough passphrase 42';
/** Fails at once (an unset secret) and dead-letters on its first attempt. */
const DOOMED = flowSource(
  'doomed',
  ['effects: [secret_read]', 'queue_max_attempts: 1', 'log_extra_mask_fields: [iban]'],
  '## Step: never_set_q\neffects: [secret_read]\n',
);

describe('the Queues page masks dead-letter payloads', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    deployFlow(sandbox, DOOMED);
    for (const role of ['developer', 'support', 'sysadmin']) {
      const r = svc(sandbox, ['ui', 'user', 'add', '--username', role, '--role', role, '--db', sandbox.db], {
        input: `${PASSWORD}\n`,
      });
      assert.equal(r.code, 0, r.stderr);
    }
    server = await startServer(sandbox);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('for every role, with the global list and the flow own fields', async () => {
    const body = '{"password": "hunter2-secret", "iban": "DE89370400440532013000", "note": "visible-note"}';
    assert.equal((await enqueue(server.url, 'doomed', body, { key, correlationId: 'dl-1' })).status, 202);
    await waitFor('the dead letter', () =>
      events(sandbox, 'correlation_id = ?', ['dl-1']).find((r) => r.event === 'dlq_moved'),
    );
    for (const role of ['developer', 'support', 'sysadmin']) {
      const cookie = await uiLogin(server.url, role, PASSWORD);
      const page = await (await fetch(`${server.url}/ui/queues`, { headers: { cookie } })).text();
      assert.match(page, /visible-note/, `${role}: the dead letter is listed`);
      assert.doesNotMatch(page, /hunter2-secret/, `${role}: password masked`);
      assert.doesNotMatch(page, /DE89370400440532013000/, `${role}: the flow's own masked field`);
      assert.match(page, /&quot;password&quot;: &quot;\*\*\*&quot;|"password": "\*\*\*"/, `${role}: shown as ***`);
    }
  });
});

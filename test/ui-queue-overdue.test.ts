/**
 * Black-box (issue "see it", item 2): a queue whose retry is overdue with no worker running it is
 * flagged on the Queues page and the Overview. The retry is left by another process of the state
 * directory that stopped (its worker gone): a server on files does not take up a queue another
 * process touched until a submission reaches it through this server (docs/queues.md), so nobody
 * runs the retry. On a PostgreSQL store the server adopts such a queue within 2 s (no flag to show).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../src/storage/index.js';
import type { RetryPolicy } from '../src/queue/index.js';
import { OVERDUE_GRACE_MS } from '../src/app/use-cases/dlq.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';
import { waitFor } from './helpers/wait.js';

const PASSWORD = 'a long enough passphrase 42';
/** The first retry 300 ms after a failure: the worker is stopped before it comes due. */
const SOON: RetryPolicy = { maxAttempts: 5, initialDelayMs: 300, backoffFactor: 1, maxDelayMs: 300 };
const FLAG = /<span class="badge bad"\s*>overdue retries, no worker: (\d+), oldest due (\S+)<\/span/;

describe('a queue with overdue retries and no worker', { skip: ON_PG_STORE && 'a PostgreSQL node adopts it' }, () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let cookie = '';
  let dueIso = '';

  before(async () => {
    const r = svc(sandbox, ['ui', 'user', 'add', '--username', 'ops', '--role', 'sysadmin', '--db', sandbox.db], {
      input: `${PASSWORD}\n`,
    });
    assert.equal(r.code, 0, r.stderr);
    server = await startServer(sandbox);
    cookie = await uiLogin(server.url, 'ops', PASSWORD);
    // Another process of the state directory: its worker fails the message once, then it stops.
    const other = await openStore(sandbox.db);
    try {
      await other.queues.append('acme', 'stuck', { correlationId: 'stuck-1', payload: { n: 1 } });
      let failed = false;
      await other.queues.startConsumer('acme', 'stuck', {
        pollIntervalMs: 20,
        handler: async () => ({ kind: 'retry', error: 'backend down', policy: SOON }),
        onAttemptFailed: () => (failed = true),
      });
      await waitFor('the first attempt failed', () => failed || undefined);
    } finally {
      await other.close();
    }
    const stats = await (async () => {
      const s = await openStore(sandbox.db);
      try {
        return await s.queues.stats('acme', 'stuck');
      } finally {
        await s.close();
      }
    })();
    assert.equal(stats.retriesScheduled, 1, 'the retry is left in the schedule');
    dueIso = new Date(stats.retries[0]!.dueMs).toISOString();
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  const get = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { cookie } })).text();

  it('is not flagged while its retry is due within the grace', async () => {
    const page = await get('/ui/queues');
    assert.match(page, /acme\/stuck/);
    assert.ok(Date.now() < Date.parse(dueIso) + OVERDUE_GRACE_MS, 'read within the grace');
    assert.doesNotMatch(page, /overdue retries/);
  });

  it('is flagged on the Queues page and the Overview once the retry is past due by more than the grace, with the count and the oldest due time', async () => {
    const page = await waitFor(
      'the flag',
      async () => {
        const p = await get('/ui/queues');
        return FLAG.test(p) ? p : undefined;
      },
      OVERDUE_GRACE_MS + 10_000,
      250,
    );
    assert.ok(Date.now() > Date.parse(dueIso) + OVERDUE_GRACE_MS, 'flagged only past the grace');
    const [, count, oldest] = FLAG.exec(page)!;
    assert.deepEqual([count, oldest], ['1', dueIso]);
    // The queue's row (its name links to the flow's page), not the Pending retries row below.
    const row = /<tr>\s*<td><a href="\/ui\/registry\/acme\/stuck">acme\/stuck<\/a><\/td>[\s\S]*?<\/tr>/.exec(page)![0];
    assert.match(row, /<td>none\s*<span class="badge bad"/, 'in the Worker cell, which says none');
    assert.match(await get('/ui'), FLAG, 'the Overview shows it too');
  });

  it('says in the Processed heading what it counts', async () => {
    assert.match(await get('/ui/queues'), /<th title="Messages whose delivery finished[^"]*">Processed<\/th>/);
  });
});

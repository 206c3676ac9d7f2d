/**
 * Black-box: the Executions page's Deliveries view of a real `svc serve` (the default view): one row
 * per delivery, whether answered on /run or queued through /enqueue (a queue hand-off, retries and
 * a dead letter included), with its outcome, status, duration and failing step, and the story
 * page's summary of how it ended. Both stores (SVC_TEST_STORE=postgres for PostgreSQL).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { logRows, waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';
import { sendDelivery } from './helpers/flow-calls.js';

const PASSWORD = 'a long enough passphrase 42';
const ECHO = '## Step: echo\n```ntd\n{"who": "{{ ctx.input.who }}"}\n```';
/** Refuses n of 5 or less (422) at its step `check`. */
const PICKY = '## Step: check\n```validate\nctx.input.n > 5 | n must be above 5 | semantic\n```';

/** The body rows of the page's table (none when it shows no table). */
function rowsOf(page: string): string[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(page)?.[1] ?? '';
  return body.match(/<tr>[\s\S]*?<\/tr>/g) ?? [];
}

/** A row's cells as text (tags dropped, spaces folded). */
function cellsOf(row: string): string[] {
  return [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) =>
    m[1]!
      .replace(/<[^>]+>/g, '')
      .replace(/\s+/g, ' ')
      .trim(),
  );
}

/** A duration cell read back in milliseconds ("12.4 ms", "2.1 s", "1.5 min"). */
function durationMs(text: string): number {
  const m = /^(\d+\.\d) (ms|s|min)$/.exec(text);
  assert.ok(m !== null, `a duration: "${text}"`);
  return Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
}

describe('the Executions page lists one row per delivery', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let cookie = '';
  let key = '';
  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { cookie } });
    return { status: res.status, text: await res.text() };
  };
  const call = (name: string, door: 'run' | 'enqueue', correlationId: string, body: unknown) =>
    sendDelivery(server.url, key, { tenant: 'acme', flow: name, door }, correlationId, body);

  before(async () => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    deployFlow(sandbox, flow('acme', 'hello', '', ECHO));
    deployFlow(sandbox, flow('acme', 'picky', 'queue_max_attempts: 2\nqueue_initial_delay_ms: 10', PICKY));
    const r = svc(sandbox, ['ui', 'user', 'add', '--username', 'dev', '--role', 'developer', '--db', sandbox.db], {
      input: `${PASSWORD}\n`,
    });
    assert.equal(r.code, 0, r.stderr);
    server = await startServer(sandbox);
    cookie = await uiLogin(server.url, 'dev', PASSWORD);
    assert.equal(await call('hello', 'run', 'run-ok', { who: 'a' }), 200);
    assert.equal(await call('picky', 'run', 'run-bad', { n: 1 }), 422);
    await waitForLogRows(sandbox, { event: 'completed' }, 2);
    assert.equal(await call('hello', 'enqueue', 'q-ok', { who: 'b' }), 202);
    await waitForLogRows(sandbox, { event: 'queue_processed' }, 1);
    // Two attempts (a queue_failed row each), then the dead letter.
    assert.equal(await call('picky', 'enqueue', 'q-dead', { n: 0 }), 202);
    await waitForLogRows(sandbox, { event: 'dlq_moved' }, 1);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('by default: each delivery once, newest first, with its kind, outcome, status, duration and failing step', async () => {
    const page = await get('/ui/executions');
    assert.equal(page.status, 200);
    const rows = rowsOf(page.text).map(cellsOf);
    // Ended, tenant/flow, kind, outcome, status, duration, failing step, correlation id.
    assert.deepEqual(
      rows.map(([, flowName, kind, outcome, status, , step, id]) => [id, flowName, kind, outcome, status, step]),
      [
        ['q-dead', 'acme/picky', 'queue', 'dead_lettered', '', 'check'],
        ['q-ok', 'acme/hello', 'queue', 'succeeded', '200', ''],
        ['run-bad', 'acme/picky', 'run', 'failed', '422', 'check'],
        ['run-ok', 'acme/hello', 'run', 'succeeded', '200', ''],
      ],
    );
    for (const row of rows) {
      assert.match(row[0]!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'the time to the millisecond');
      assert.ok(durationMs(row[5]!) > 0, `a duration above zero: ${row.join(' | ')}`);
    }
    // The dead letter's duration runs from its enqueue through both attempts and the wait between them.
    const stored = logRows(sandbox, { correlation_id: 'q-dead', event: 'dlq_moved' })[0]!;
    assert.ok(stored.duration_ms! >= 10, `at least the retry delay: ${stored.duration_ms}`);
    const links = rowsOf(page.text).map((r) => [...r.matchAll(/href="([^"]+)"/g)].map((m) => m[1]));
    assert.deepEqual(links[0], ['/ui/registry/acme/picky', '/ui/executions/q-dead']);
  });

  it("a queued attempt that failed names its step on its row (All rows), the dead letter's too", async () => {
    const failed = logRows(sandbox, { event: 'queue_failed', flow: 'picky' });
    assert.deepEqual(
      failed.map((r) => [r.outcome, r.failed_step, r.step]),
      [
        ['retry', 'check', null],
        ['dead_lettered', 'check', null],
      ],
    );
    const page = await get('/ui/executions?view=rows&flow=picky');
    assert.equal(page.status, 200);
    assert.equal(rowsOf(page.text).length, 6, 'received, completed, enqueued, two failed attempts, dlq_moved');
  });

  it('the filters narrow the deliveries; the event kind belongs to the All rows view', async () => {
    const ids = async (query: string) => {
      const page = await get(`/ui/executions?${query}`);
      assert.equal(page.status, 200, query);
      return rowsOf(page.text).map((r) => cellsOf(r)[7]);
    };
    assert.deepEqual(await ids('flow=picky'), ['q-dead', 'run-bad']);
    assert.deepEqual(await ids('status=4xx'), ['run-bad']);
    assert.deepEqual(await ids('correlation_id=q-ok'), ['q-ok']);
    assert.deepEqual(await ids('view=deliveries&tenant=acme&since=1h'), ['q-dead', 'q-ok', 'run-bad', 'run-ok']);
    // A search naming an event kind (the Overview's counters) lists rows, as before.
    const rows = await get('/ui/executions?event=received');
    assert.equal(rowsOf(rows.text).length, 2);
    assert.match(rows.text, /<a href="[^"]*view=rows[^"]*" class="on"/);
    for (const query of ['view=list', 'view=deliveries&event=completed']) {
      const refused = await get(`/ui/executions?${query}`);
      assert.equal(refused.status, 400, query);
      assert.match(
        refused.text,
        /role="alert">Nothing was searched: (view must be deliveries or rows|event filters the rows view)/,
      );
      assert.deepEqual(rowsOf(refused.text), []);
    }
  });

  it('pages by id: Older rows continues with the next deliveries', async () => {
    const older = await get(`/ui/executions?before=${logRows(sandbox, { correlation_id: 'q-ok' }).at(-1)!.id}`);
    assert.deepEqual(
      rowsOf(older.text).map((r) => cellsOf(r)[7]),
      ['run-bad', 'run-ok'],
    );
  });

  it("a delivery's story opens with how it ended: outcome, status, duration and failing step", async () => {
    const summary = async (id: string) => {
      const page = await get(`/ui/executions/${id}`);
      assert.equal(page.status, 200);
      const m = /<ul class="summary">([\s\S]*?)<\/ul>/.exec(page.text);
      assert.ok(m !== null, `${id}: a summary`);
      return m[1]!
        .replace(/<[^>]+>/g, '')
        .replace(/\s+/g, ' ')
        .trim();
    };
    assert.match(
      await summary('run-bad'),
      /^acme\/picky \(run\): failed, status 422, \d+\.\d (ms|s), failing step check \(ended \d{4}-/,
    );
    assert.match(await summary('run-ok'), /^acme\/hello \(run\): succeeded, status 200, \d+\.\d (ms|s) \(ended /);
    assert.match(
      await summary('q-dead'),
      /^acme\/picky \(queue\): dead_lettered, \d+\.\d (ms|s), failing step check \(ended /,
    );
    assert.match(await summary('q-ok'), /^acme\/hello \(queue\): succeeded, status 200, \d+\.\d (ms|s) \(ended /);
  });
});

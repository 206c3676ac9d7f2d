/**
 * Black-box: the Executions page of a real `svc serve` over HTTP, logged in as a browser does. Its
 * filters refuse a value they cannot read (400, the field named, no rows: never a wider search),
 * offer the event kinds and statuses as choices, and narrow the rows by what they accept.
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
/** Refuses every input (422): a failed run. */
const PICKY = '## Step: check\n```validate\nctx.input.n > 5 | n must be above 5 | semantic\n```';

/** The body rows of the page's table (none when it shows no table). */
function rowsOf(page: string): string[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(page)?.[1] ?? '';
  return body.match(/<tr>[\s\S]*?<\/tr>/g) ?? [];
}

const ENTITIES: Record<string, string> = { '&quot;': '"', '&#39;': "'", '&lt;': '<', '&gt;': '>', '&amp;': '&' };

/** The text of the page's alert, as a browser shows it. */
function alertOf(page: string): string | undefined {
  const m = /<div class="error" role="alert">([\s\S]*?)<\/div>/.exec(page);
  return m?.[1]
    ?.replace(/&(quot|#39|lt|gt|amp);/g, (e) => ENTITIES[e]!)
    .replace(/\s+/g, ' ')
    .trim();
}

describe('the Executions page filters', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let cookie = '';
  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { cookie } });
    return { status: res.status, text: await res.text() };
  };
  // One key, made before the server starts: on the PostgreSQL store a key made while it runs reaches
  // the server's registry copy a moment later, and a request sent in that moment was refused (401).
  let key = '';
  const run = async (name: string, correlationId: string, body: unknown) => {
    const res = await fetch(`${server.url}/flows/acme/${name}/run`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-correlation-id': correlationId,
      },
      body: JSON.stringify(body),
    });
    await waitForLogRows(sandbox, { correlation_id: correlationId, event: 'completed' });
    return res.status;
  };

  before(async () => {
    createTenant(sandbox, 'acme');
    deployFlow(sandbox, flow('acme', 'hello', '', ECHO));
    deployFlow(sandbox, flow('acme', 'picky', '', PICKY));
    const r = svc(sandbox, ['ui', 'user', 'add', '--username', 'dev', '--role', 'developer', '--db', sandbox.db], {
      input: `${PASSWORD}\n`,
    });
    assert.equal(r.code, 0, r.stderr);
    key = createKey(sandbox, 'acme');
    server = await startServer(sandbox);
    cookie = await uiLogin(server.url, 'dev', PASSWORD);
    assert.equal(await run('hello', 'ok-1', { who: 'a' }), 200);
    assert.equal(await run('picky', 'bad-1', { n: 1 }), 422);
    assert.equal(await run('hello', 'ok-2', { who: 'b' }), 200);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  const REFUSED: [string, RegExp][] = [
    [
      'status=failed',
      /status must be an HTTP status from 100 to 599 \(404\), a class \(4xx\) or a range \(400-599\), got "failed"/,
    ],
    ['status=600', /status must be an HTTP status from 100 to 599/],
    ['status=20', /status must be an HTTP status from 100 to 599/],
    [
      'since=yesterday',
      /since must be a duration back from now \(30s, 10m, 2h, 7d\), a UTC day \(2026-01-31\) or a UTC time .*got "yesterday"/,
    ],
    ['since=2026-02-30', /since must be a duration back from now/],
    ['until=2026-01-31T08:00%2B02:00', /until must be a duration back from now.*got "2026-01-31T08:00\+02:00"/],
    ['event=finished', /unknown event kind "finished"; the log holds received, completed, access_denied/],
    ['event=step_traced', /step_traced rows are trace rows, not part of the log search/],
    ['tenant=Acme', /tenant "Acme" must start with a lowercase letter or digit/],
    ['flow=hel%20lo', /flow "hel lo" may hold only lowercase letters, digits/],
    ['before=abc', /before must be a row id \(a whole number\), got "abc"/],
  ];
  for (const [query, message] of REFUSED) {
    it(`?${query} is refused with 400, the field named, and no rows`, async () => {
      const page = await get(`/ui/executions?${query}`);
      assert.equal(page.status, 400);
      assert.match(alertOf(page.text) ?? '', message);
      assert.deepEqual(rowsOf(page.text), [], 'a refused filter shows no rows');
      assert.doesNotMatch(page.text, /No events match/, 'nor says that nothing matched');
      assert.match(page.text, /<form method="get" class="filters">/, 'the form is there to correct it');
      assert.doesNotMatch(page.text, /<option value="(failed|600|20|finished|step_traced)"/, 'nor offered as a choice');
    });
  }

  it('every refused field is named at once, and a valid one beside them does not search', async () => {
    const page = await get('/ui/executions?status=failed&since=yesterday&flow=hello');
    assert.equal(page.status, 400);
    assert.match(alertOf(page.text) ?? '', /status must be .*; since must be /);
    assert.deepEqual(rowsOf(page.text), []);
  });

  it('the unfiltered page lists every delivery; the same rows the refused filters would have hidden', async () => {
    const page = await get('/ui/executions');
    assert.equal(page.status, 200);
    assert.equal(alertOf(page.text), undefined);
    assert.equal(rowsOf(page.text).length, 3, 'one row per run (the Deliveries view, test/ui-deliveries.test.ts)');
    const rows = await get('/ui/executions?view=rows');
    assert.equal(rows.status, 200);
    assert.equal(rowsOf(rows.text).length, 6, 'received and completed of three runs');
  });

  it('offers the event kinds and statuses as choices, "any" first, and keeps what was chosen', async () => {
    const page = await get('/ui/executions?event=completed&status=4xx');
    const select = (name: string) => new RegExp(`<select name="${name}">([\\s\\S]*?)</select>`).exec(page.text)![1]!;
    const options = (name: string) => [...select(name).matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]);
    assert.equal(options('event')[0], '');
    assert.match(select('event'), /<option value="" >any<\/option>/);
    assert.ok(options('event').includes('queue_failed'));
    assert.ok(!options('event').includes('step_traced'), 'trace kinds are not offered');
    assert.match(select('event'), /<option value="completed" selected>/);
    for (const s of ['', '2xx', '4xx', '5xx', '400-599', '200', '404', '422', '500'])
      assert.ok(options('status').includes(s), `status choice ${s}`);
    assert.match(select('status'), /<option value="4xx" selected>/);
  });

  it('narrows the rows by kind, status (a status, a class, a range) and time', async () => {
    const correlations = async (query: string) => {
      const page = await get(`/ui/executions?${query}`);
      assert.equal(page.status, 200, `${query}: ${alertOf(page.text)}`);
      return rowsOf(page.text).map((r) => /\/ui\/executions\/([^"]+)"/.exec(r)?.[1]);
    };
    assert.deepEqual(await correlations('event=completed'), ['ok-2', 'bad-1', 'ok-1']);
    assert.deepEqual(await correlations('event=completed&status=200'), ['ok-2', 'ok-1']);
    assert.deepEqual(await correlations('status=422'), ['bad-1']);
    assert.deepEqual(await correlations('status=4xx'), ['bad-1']);
    assert.deepEqual(await correlations('status=400-599'), ['bad-1']);
    assert.deepEqual(await correlations('flow=picky&event=received'), ['bad-1']);
    assert.deepEqual(await correlations('since=1h&event=completed&flow=hello'), ['ok-2', 'ok-1']);
    // A status given in the URL that is not among the choices is still searched, and shown chosen.
    const free = await get('/ui/executions?status=418');
    assert.equal(free.status, 200);
    assert.deepEqual(rowsOf(free.text), []);
    assert.match(free.text, /<option value="418" selected>418<\/option>/);
    assert.deepEqual(await correlations('since=2999-01-01'), []);
    assert.deepEqual(await correlations('until=2000-01-01T00:00:00.000Z'), []);
  });

  it("the table and a delivery's story show each row's time to the millisecond", async () => {
    const times = (page: string) => rowsOf(page).map((r) => /<td>([^<]*)<\/td>/.exec(r)?.[1]);
    const list = times((await get('/ui/executions?view=rows')).text);
    const story = times((await get('/ui/executions/bad-1')).text);
    assert.equal(list.length, 6);
    assert.equal(story.length, 2);
    for (const t of [...list, ...story]) assert.match(t ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    // The stored time itself is kept to the millisecond: the story's times are the rows'.
    const stored = logRows(sandbox, { correlation_id: 'bad-1' }).map((r) => r.ts);
    assert.deepEqual(story, stored);
  });
});

describe("the Overview's counters link to the rows they count", () => {
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
    deployFlow(sandbox, flow('acme', 'picky', 'queue_max_attempts: 1', PICKY));
    const r = svc(sandbox, ['ui', 'user', 'add', '--username', 'dev', '--role', 'developer', '--db', sandbox.db], {
      input: `${PASSWORD}\n`,
    });
    assert.equal(r.code, 0, r.stderr);
    key = createKey(sandbox, 'acme');
    server = await startServer(sandbox);
    cookie = await uiLogin(server.url, 'dev', PASSWORD);
    // Three runs, two of them failed; three messages, one dead-lettered at its first failure.
    assert.equal(await call('hello', 'run', 'run-ok', { who: 'a' }), 200);
    assert.equal(await call('picky', 'run', 'run-bad-1', { n: 1 }), 422);
    assert.equal(await call('picky', 'run', 'run-bad-2', { n: 2 }), 422);
    for (const [name, id, body] of [
      ['hello', 'q-ok-1', { who: 'b' }],
      ['hello', 'q-ok-2', { who: 'c' }],
      ['picky', 'q-bad', { n: 0 }],
    ] as const)
      assert.equal(await call(name, 'enqueue', id, body), 202);
    await waitForLogRows(sandbox, { event: 'completed' }, 3);
    await waitForLogRows(sandbox, { event: 'queue_processed' }, 2);
    await waitForLogRows(sandbox, { event: 'dlq_moved' }, 1);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('each counter of the last hour opens the Executions search whose rows are the ones counted', async () => {
    const overview = await get('/ui');
    assert.equal(overview.status, 200);
    const cards = new Map(
      [...overview.text.matchAll(/<a class="card" href="([^"]+)"><b>(\d+)<\/b>([^<]+)<\/a>/g)].map((m) => [
        m[3]!,
        { href: m[1]!.replace(/&amp;/g, '&'), n: Number(m[2]) },
      ]),
    );
    const expected: [string, number, RegExp][] = [
      ['runs, last hour', 3, /^\/ui\/executions\?event=completed&since=/],
      ['failed runs, last hour', 2, /^\/ui\/executions\?event=completed&status=400-599&since=/],
      ['queue messages processed, last hour', 2, /^\/ui\/executions\?event=queue_processed&since=/],
      ['queue messages filtered, last hour', 0, /^\/ui\/executions\?event=queue_filtered&since=/],
      ['queue attempts failed, last hour', 1, /^\/ui\/executions\?event=queue_failed&since=/],
    ];
    for (const [label, n, href] of expected) {
      const card = cards.get(label);
      assert.ok(card !== undefined, `a link on "${label}": ${[...cards.keys()].join(', ')}`);
      assert.equal(card.n, n, label);
      assert.match(card.href, href);
      const rows = await get(card.href);
      assert.equal(rows.status, 200, `${label}: ${card.href}`);
      assert.equal(rowsOf(rows.text).length, card.n, `${label}: the rows behind the link`);
    }
    const failed = await get(cards.get('failed runs, last hour')!.href);
    assert.deepEqual(
      rowsOf(failed.text).map((r) => /\/ui\/executions\/([^"]+)"/.exec(r)?.[1]),
      ['run-bad-2', 'run-bad-1'],
    );
  });

  it('the dead letters counter opens the Queues page at its dead letters, as many as counted', async () => {
    const overview = await get('/ui');
    const m = /<a class="card" href="([^"]+)"><b>(\d+)<\/b>dead letters<\/a>/.exec(overview.text);
    assert.ok(m !== null, 'the dead letters counter is a link');
    assert.equal(m[1], '/ui/queues#dead-letters');
    assert.equal(Number(m[2]), 1);
    const queues = await get(m[1]);
    const dead = queues.text.slice(queues.text.indexOf('<h2 id="dead-letters">'));
    assert.equal(rowsOf(dead).length, 1);
    assert.match(rowsOf(dead)[0]!, /acme\/picky/);
  });
});

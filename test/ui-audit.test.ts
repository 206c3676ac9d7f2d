/**
 * Black-box: the Audit page of a real `svc serve` over HTTP. It pages through the whole chain by
 * seq, newest first ("Older entries"), filters by event type (a choice of the types the chain
 * holds) and by actor in the store, so one `trace_enabled` is found under hundreds of queue
 * entries, and refuses a filter value it does not know (400, the field named, no entries).
 * `svc audit --event-type/--actor` reads the same way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../src/storage/index.js';
import { createTenant } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';

const PASSWORD = 'a long enough passphrase 42';
/** Queue entries written after the trace_enabled one. */
const QUEUE_ENTRIES = 230;

function rowsOf(page: string): string[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(page)?.[1] ?? '';
  return body.match(/<tr>[\s\S]*?<\/tr>/g) ?? [];
}
const seqsOf = (page: string): number[] => rowsOf(page).map((r) => Number(/<td class="num">(\d+)<\/td>/.exec(r)![1]));
const unescape = (s: string): string =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const alertOf = (page: string): string | undefined => {
  const m = /<div class="error" role="alert">([\s\S]*?)<\/div>/.exec(page);
  return m === null ? undefined : unescape(m[1]!).replace(/\s+/g, ' ').trim();
};
const olderLink = (page: string): string | undefined => {
  const m = /<a\s+href="([^"]+)"\s*>\s*Older entries\s*<\/a/.exec(page);
  return m === null ? undefined : unescape(m[1]!);
};

describe('the Audit page', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let cookie = '';
  let total = 0;
  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { cookie } });
    return { status: res.status, text: await res.text() };
  };

  before(async () => {
    createTenant(sandbox, 'acme'); // seq 1: tenant.registered, actor cli
    const store = await openStore(sandbox.store ?? sandbox.db, { pg: { maxConnections: 1 } });
    try {
      await store.audit.append({
        tenant: 'acme',
        eventType: 'trace_enabled',
        payload: { flow: 'hello', actor: 'ui:ada' },
      });
      await store.audit.appendMany(
        Array.from({ length: QUEUE_ENTRIES }, (_, i) => ({
          tenant: 'acme',
          eventType: 'queue.message.enqueued',
          payload: { flow: 'hello', id: i + 1 },
        })),
      );
      await store.audit.append({
        tenant: 'acme',
        eventType: 'trace_disabled',
        payload: { flow: 'hello', actor: 'ui:ada' },
      });
      total = await store.audit.count('acme');
    } finally {
      await store.close();
    }
    const r = svc(sandbox, ['ui', 'user', 'add', '--username', 'dev', '--role', 'developer', '--db', sandbox.db], {
      input: `${PASSWORD}\n`,
    });
    assert.equal(r.code, 0, r.stderr);
    server = await startServer(sandbox);
    cookie = await uiLogin(server.url, 'dev', PASSWORD);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('pages through the whole chain, newest first, each entry once', async () => {
    assert.equal(total, QUEUE_ENTRIES + 3);
    const seen: number[] = [];
    let path: string | undefined = '/ui/audit?tenant=acme';
    let pages = 0;
    while (path !== undefined) {
      const page = await get(path);
      assert.equal(page.status, 200, path);
      seen.push(...seqsOf(page.text));
      path = olderLink(page.text);
      pages += 1;
    }
    assert.equal(pages, 3);
    assert.deepEqual(
      seen,
      Array.from({ length: total }, (_, i) => total - i),
    );
    const first = await get('/ui/audit?tenant=acme');
    assert.match(first.text, new RegExp(`${total} entries, newest first\\.`));
    assert.equal(seqsOf(first.text).length, 100);
  });

  it('finds the one trace_enabled under the queue entries, offering the chain event types', async () => {
    const page = await get('/ui/audit?tenant=acme&event_type=trace_enabled');
    assert.equal(page.status, 200);
    assert.deepEqual(seqsOf(page.text), [2]);
    assert.equal(olderLink(page.text), undefined);
    const select = /<select name="event_type">([\s\S]*?)<\/select>/.exec(page.text)![1]!;
    assert.deepEqual(
      [...select.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]),
      ['', 'queue.message.enqueued', 'tenant.registered', 'trace_disabled', 'trace_enabled'],
    );
    assert.match(select, /<option value="trace_enabled" selected>/);
    assert.match(page.text, /showing those of type trace_enabled/);
  });

  it('filters by actor, alone or with a type, and pages a filtered listing', async () => {
    assert.deepEqual(seqsOf((await get('/ui/audit?tenant=acme&actor=ui:ada')).text), [total, 2]);
    assert.deepEqual(seqsOf((await get('/ui/audit?tenant=acme&actor=cli')).text), [1]);
    assert.deepEqual(seqsOf((await get('/ui/audit?tenant=acme&actor=ui:ada&event_type=trace_disabled')).text), [total]);
    assert.deepEqual(seqsOf((await get('/ui/audit?tenant=acme&actor=nobody')).text), []);
    const queue = await get('/ui/audit?tenant=acme&event_type=queue.message.enqueued');
    const next = olderLink(queue.text);
    assert.ok(next?.includes('event_type=queue.message.enqueued'), `the filter is kept: ${next}`);
    const second = await get(next!);
    assert.equal(seqsOf(second.text)[0], seqsOf(queue.text).at(-1)! - 1);
  });

  const REFUSED: [string, RegExp][] = [
    [
      'event_type=trace_enable',
      /event type "trace_enable" is not in the chain of acme; it holds queue\.message\.enqueued, tenant\.registered, trace_disabled, trace_enabled/,
    ],
    ['before=abc', /before must be an entry's seq \(a whole number of at least 1\), got "abc"/],
    ['actor=a%01b', /actor must be who the entries name, up to 128 characters without control characters/],
  ];
  for (const [query, message] of REFUSED) {
    it(`?${query} is refused with 400, the field named, and no entries`, async () => {
      const page = await get(`/ui/audit?tenant=acme&${query}`);
      assert.equal(page.status, 400);
      assert.match(alertOf(page.text) ?? '', message);
      assert.deepEqual(rowsOf(page.text), []);
    });
  }

  it('a tenant that is not a name is refused, not swapped for the first tenant', async () => {
    const page = await get('/ui/audit?tenant=Acme!');
    assert.equal(page.status, 400);
    assert.match(alertOf(page.text) ?? '', /tenant must be a tenant's name or _platform, got "Acme!"/);
    assert.deepEqual(rowsOf(page.text), []);
  });

  it('svc audit --event-type and --actor read the same way; an unknown type exits 1', () => {
    const audit = (...args: string[]) => svc(sandbox, ['audit', '--tenant', 'acme', ...args, '--db', sandbox.db]);
    const typed = audit('--event-type', 'trace_enabled');
    assert.equal(typed.code, 0, typed.stderr);
    assert.match(typed.stdout, /^SEQ\s+EVENT_TYPE/);
    assert.equal(typed.stdout.trim().split('\n').length, 2);
    assert.match(typed.stdout, /\n2\s+trace_enabled\s/);
    const byActor = JSON.parse(audit('--actor', 'ui:ada', '--json').stdout) as { seq: number }[];
    assert.deepEqual(
      byActor.map((e) => e.seq),
      [2, total],
      'oldest first, as svc audit prints',
    );
    const limited = audit('--event-type', 'queue.message.enqueued', '-l', '5');
    assert.match(limited.stdout, /\(latest 5 matching entries; -l <n> shows more\)/);
    const unknown = audit('--event-type', 'nope');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /event type "nope" is not in the chain of acme; it holds /);
  });
});

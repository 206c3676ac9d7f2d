/**
 * Black-box: the management UI of a `svc serve --store` node, over real HTTP: the first account
 * made from the environment in the shared store, a login with its CSRF token, every page read
 * from PostgreSQL, a change made through a form (a tenant registered, with its audit entry), and
 * keys made and revoked through the forms, in force on this node as soon as the form answers.
 * The browser tests (ui-browser.test.ts) drive the same pages on the state directory.
 */
import assert from 'node:assert/strict';
import { dirname } from 'node:path';
import { after, before, test } from 'node:test';
import { openStore, type PgStores } from '../src/storage/index.js';
import { freshPgSchema, type PgSchema } from './helpers/pg.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';

const PASSWORD = 'a long enough passphrase 42';
let schema: PgSchema;
let seed: Sandbox;
let sb: Sandbox;
let server: ServerProcess;
let store: PgStores;
let cookie = '';

async function page(path: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${server.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  return { status: r.status, text: await r.text() };
}

before(async () => {
  schema = await freshPgSchema();
  seed = makeSandbox();
  createTenant(seed, 'acme');
  createKey(seed, 'acme');
  deployFlow(seed, flow('acme', 'hello', '', '## Step: hi\n```ntd\n{"hello": "{{ ctx.input.name }}"}\n```'));
  const moved = svc(seed, ['store', 'migrate', '--from', dirname(seed.db), '--to', schema.url]);
  assert.equal(moved.code, 0, moved.stderr);
  sb = makeSandbox();
  server = await startServer(sb, ['--store', schema.url], { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: PASSWORD });
  store = (await openStore(schema.url, { pg: { maxConnections: 2 } })) as PgStores;
});

after(async () => {
  await server?.stop();
  await store?.close();
  seed?.cleanup();
  sb?.cleanup();
  await schema?.drop();
});

test('the first account is made in the store; a login with the CSRF token opens a server-side session there', async () => {
  assert.match(server.output(), /ui:\s+\S+\/ui \(account admin created from SVC_UI_ADMIN_USER as sysadmin\)/);
  assert.equal(await store.uiUsers.count(), 1);
  cookie = await uiLogin(server.url, 'admin', PASSWORD);
  const sessions = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM ui_sessions');
  assert.equal(sessions.rows[0]!.n, 1);
});

test('every page answers from the store', async () => {
  for (const path of [
    '/ui',
    '/ui/registry',
    '/ui/registry/acme/hello',
    '/ui/executions',
    '/ui/queues',
    '/ui/tenants',
    '/ui/keys',
    '/ui/audit?tenant=acme',
    '/ui/users',
    '/ui/certificates',
    '/ui/settings',
  ]) {
    const p = await page(path);
    assert.equal(p.status, 200, `${path}: ${p.status} ${p.text.slice(0, 300)}`);
  }
  // Trace rows are the support role's alone: a sysadmin is refused, as on the state directory.
  assert.equal((await page('/ui/traces')).status, 403);
  assert.match((await page('/ui/registry')).text, /hello/);
  assert.match((await page('/ui/tenants')).text, /acme/);
});

test('a tenant registered through the form is in the store with its audit entry', async () => {
  const form = await page('/ui/tenants');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)![1]!;
  const r = await fetch(`${server.url}/ui/tenants`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, id: 'beta', display_name: 'Beta' }),
  });
  assert.equal(r.status, 303, await r.text());
  assert.equal((await store.tenants.get('beta'))?.displayName, 'Beta');
  const entries = await store.audit.latest('beta', 5);
  assert.deepEqual(
    entries.map((e) => e.eventType),
    ['tenant.registered'],
  );
  assert.match(entries[0]!.payload, /"actor":"ui:admin"/);
});

/** Posts a UI form (the CSRF token taken from `formPage`) and returns the answer. */
async function postForm(formPage: string, action: string, fields: Record<string, string>): Promise<Response> {
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await page(formPage)).text)![1]!;
  return fetch(`${server.url}${action}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, ...fields }),
  });
}

const runHello = (key: string) =>
  fetch(`${server.url}/flows/acme/hello/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"name":"x"}',
  }).then((r) => r.status);

test('a key made or revoked through the UI is in force on this node as soon as the form answers (the registry copy caught up first)', async () => {
  // Each round asks the node right after the form's answer: without the wait for the copy, a few
  // milliseconds of the change log, some of these would still see the state before.
  for (let round = 0; round < 8; round++) {
    const made = await postForm('/ui/keys', '/ui/keys', { tenant: 'acme', label: `round ${round}` });
    assert.equal(made.status, 200);
    const text = await made.text();
    const raw = /<pre id="new-key">([^<]+)<\/pre>/.exec(text)![1]!;
    const id = /Created key (\d+) for acme/.exec(text)![1]!;
    assert.equal(await runHello(raw), 200, `round ${round}: the new key at once`);
    const revoked = await postForm('/ui/keys', `/ui/keys/${id}/revoke`, {});
    assert.equal(revoked.status, 303);
    assert.equal(await runHello(raw), 401, `round ${round}: the revoked key at once`);
  }
});

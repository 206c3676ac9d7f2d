/**
 * The management UI in real headless Chromium (Debian's, driven by playwright-core) against the real
 * `svc serve`: bootstrap login, the role matrix, tracing across roles, a dead letter replayed from the
 * Queues page, keys created and revoked there, escaping, CSRF and logout. Screenshots go to docs/ui/
 * (the PostgreSQL pass keeps its own in the sandbox).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { logRows, waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const DOCS_SHOTS = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/ui');
const PASSWORD = 'correct horse battery staple';
const ROLES = ['sysadmin', 'support', 'developer'] as const;
type Role = (typeof ROLES)[number];

/** Every page and who may open it (docs/ui.md); the rest get 403. */
const PAGES: Record<string, readonly Role[]> = {
  '/ui': ROLES,
  '/ui/registry': ROLES,
  '/ui/executions': ROLES,
  '/ui/traces': ['support'],
  '/ui/replay': ['support'],
  '/ui/queues': ROLES,
  '/ui/tenants': ['sysadmin'],
  '/ui/keys': ['sysadmin'],
  '/ui/audit': ROLES,
  '/ui/certificates': ROLES,
  '/ui/settings': ROLES,
  '/ui/users': ['sysadmin'],
};

describe(
  'the management UI in a browser',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install -y chromium)` },
  () => {
    const sandbox = makeSandbox();
    // docs/ui shows the SQLite pass's pictures; the PostgreSQL pass takes its own into the sandbox, so
    // one suite run does not write docs/ui twice.
    const shots = ON_PG_STORE ? join(sandbox.home, 'shots') : DOCS_SHOTS;
    let server: ServerProcess;
    let browser: Browser;
    let key = '';
    const sessions = new Map<Role, { context: BrowserContext; page: Page }>();
    const username = (role: Role) => (role === 'sysadmin' ? 'admin' : role);

    async function logIn(role: Role): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${server.url}/ui`);
      assert.match(page.url(), /\/ui\/login$/);
      await page.fill('input[name=username]', username(role));
      await page.fill('input[name=password]', PASSWORD);
      await page.click('button[type=submit]');
      await page.waitForURL(`${server.url}/ui`);
      sessions.set(role, { context, page });
      return page;
    }
    const as = (role: Role) => sessions.get(role)!.page;
    const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    /** The session's CSRF token, from the logout form every page carries. */
    const csrfOf = (page: Page) => page.locator('header input[name=_csrf]').getAttribute('value');

    before(async () => {
      mkdirSync(shots, { recursive: true });
      createTenant(sandbox, 'acme', { displayName: 'Acme <script>alert("x")</script>' });
      key = createKey(sandbox, 'acme');
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          join(sandbox.home, 'p.key'),
          '-out',
          join(sandbox.home, 'p.pem'),
          '-days',
          '12',
          '-subj',
          '/CN=partner.example',
        ],
        { stdio: 'ignore' },
      );
      assert.equal(
        svc(sandbox, [
          'cert',
          'add',
          join(sandbox.home, 'p.pem'),
          '--tenant',
          'acme',
          '--name',
          'partner',
          '--db',
          sandbox.db,
        ]).code,
        0,
      );
      deployFlow(
        sandbox,
        flow('acme', 'hello', 'log_level: full', '## Step: echo\n```ntd\n{"hello": "{{ ctx.input.who }}"}\n```'),
      );
      deployFlow(
        sandbox,
        flow('acme', 'shady', '', '# Shady <script>alert("src")</script>\n\n## Step: a\n```ntd\n{"ok": true}\n```'),
      );
      deployFlow(
        sandbox,
        flow(
          'acme',
          'picky',
          'queue_max_attempts: 1',
          '## Step: check\n```validate\nctx.input.n > 5 | n must be above 5 | semantic\n```',
        ),
      );
      server = await startServer(sandbox, [], { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: PASSWORD });
      assert.match(
        server.output(),
        /ui:\s+http:\/\/127\.0\.0\.1:\d+\/ui \(account admin created from SVC_UI_ADMIN_USER as sysadmin\)/,
      );
      assert.ok(
        !server.output().includes(PASSWORD) && !server.stderr().includes(PASSWORD),
        'the password is never printed',
      );
      // The other accounts are made by the operator command, from another process, once the server runs.
      for (const role of ['support', 'developer'] as const) {
        const r = svc(sandbox, ['ui', 'user', 'add', '--username', role, '--role', role, '--db', sandbox.db], {
          input: `${PASSWORD}\n`,
        });
        assert.equal(r.code, 0, r.stderr);
      }
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
      });
      for (const role of ROLES) await logIn(role);
    });
    after(async () => {
      await browser?.close();
      await server?.stop();
      sandbox.cleanup();
    });

    it('a wrong password is refused on the login page, naming no cause', async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${server.url}/ui/login`);
      await page.fill('input[name=username]', 'admin');
      await page.fill('input[name=password]', 'not the password at all');
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/ui/login') && r.request().method() === 'POST'),
        page.click('button[type=submit]'),
      ]);
      assert.equal(answer.status(), 401);
      assert.match(await page.locator('[role=alert]').innerText(), /unknown user or wrong password/);
      await context.close();
    });

    it('each role opens the pages the matrix allows and gets 403 on the others', async () => {
      for (const role of ROLES) {
        for (const [path, allowed] of Object.entries(PAGES)) {
          const res = await as(role).goto(`${server.url}${path}`);
          assert.equal(res?.status(), allowed.includes(role) ? 200 : 403, `${role} ${path}`);
        }
        await as(role).goto(`${server.url}/ui`);
        const nav = await as(role).locator('header a').allInnerTexts();
        assert.equal(nav.includes('Traces'), role === 'support', `${role} nav: ${nav.join(', ')}`);
      }
      await as('sysadmin').goto(`${server.url}/ui`);
      await shot(as('sysadmin'), 'overview');
    });

    it('a refused action changes nothing: a developer posting a tenant with a valid token gets 403', async () => {
      const page = as('developer');
      await page.goto(`${server.url}/ui/registry`);
      const res = await page.request.post(`${server.url}/ui/tenants`, {
        form: { _csrf: (await csrfOf(page))!, id: 'intruder', display_name: 'x' },
      });
      assert.equal(res.status(), 403);
      assert.ok(!svc(sandbox, ['tenant', 'list', '--db', sandbox.db]).stdout.includes('intruder'));
    });

    it('every action the matrix refuses a role answers 403 with a valid token, and changes nothing', async () => {
      const actions: [string, Record<string, string>, readonly Role[]][] = [
        ['/ui/registry/acme/hello/trace', { enabled: '1' }, ['sysadmin']],
        ['/ui/queues/discard-all', { tenant: 'acme', flow: 'nothing-here' }, ['sysadmin', 'support']],
        ['/ui/tenants', { id: 'refused', display_name: 'x' }, ['sysadmin']],
        ['/ui/tenants/acme/status', { status: 'disabled' }, ['sysadmin']],
        ['/ui/keys', { tenant: 'acme', label: 'refused' }, ['sysadmin']],
        ['/ui/keys/1/revoke', {}, ['sysadmin']],
        ['/ui/settings', { name: 'log_retention_days', value: '7' }, ['sysadmin']],
        ['/ui/users', { username: 'refused', role: 'developer', password: PASSWORD }, ['sysadmin']],
      ];
      const before = [
        svc(sandbox, ['tenant', 'list', '--json', '--db', sandbox.db]).stdout,
        svc(sandbox, ['keys', 'list', '--tenant', 'acme', '--json', '--db', sandbox.db]).stdout,
        svc(sandbox, ['trace', 'list', '--json', '--db', sandbox.db]).stdout,
      ];
      for (const role of ['support', 'developer'] as const) {
        const page = as(role);
        await page.goto(`${server.url}/ui`);
        const token = (await csrfOf(page))!;
        for (const [path, form, allowed] of actions) {
          if (allowed.includes(role)) continue;
          const res = await page.request.post(`${server.url}${path}`, {
            form: { _csrf: token, ...form },
            maxRedirects: 0,
          });
          assert.equal(res.status(), 403, `${role} POST ${path}`);
        }
      }
      const after = [
        svc(sandbox, ['tenant', 'list', '--json', '--db', sandbox.db]).stdout,
        svc(sandbox, ['keys', 'list', '--tenant', 'acme', '--json', '--db', sandbox.db]).stdout,
        svc(sandbox, ['trace', 'list', '--json', '--db', sandbox.db]).stdout,
      ];
      assert.deepEqual(after, before);
      assert.ok(!svc(sandbox, ['ui', 'user', 'list', '--db', sandbox.db]).stdout.includes('refused'));
    });

    it("a form post without the CSRF token (or with another session's) is refused and changes nothing", async () => {
      const page = as('sysadmin');
      await page.goto(`${server.url}/ui/tenants`);
      const missing = await page.request.post(`${server.url}/ui/tenants`, {
        form: { id: 'forged', display_name: 'x' },
      });
      assert.equal(missing.status(), 403);
      const otherToken = await csrfOf(as('support'));
      const foreign = await page.request.post(`${server.url}/ui/tenants`, {
        form: { _csrf: otherToken!, id: 'forged', display_name: 'x' },
      });
      assert.equal(foreign.status(), 403);
      assert.ok(!svc(sandbox, ['tenant', 'list', '--db', sandbox.db]).stdout.includes('forged'));
    });

    it('a display name or a flow source holding <script> is shown as text, never run', async () => {
      const page = as('sysadmin');
      let dialogs = 0;
      page.on('dialog', (d) => {
        dialogs++;
        void d.dismiss();
      });
      await page.goto(`${server.url}/ui/registry`);
      assert.ok((await page.locator('table').first().innerText()).includes('Acme <script>alert("x")</script>'));
      await page.goto(`${server.url}/ui/registry/acme/shady`);
      assert.ok((await page.locator('#flow-source').innerText()).includes('# Shady <script>alert("src")</script>'));
      assert.equal(dialogs, 0);
      const csp = (await page.request.get(`${server.url}/ui/registry`)).headers()['content-security-policy'];
      assert.match(csp ?? '', /script-src 'self'/);
    });

    it('a sysadmin turns tracing on from the Registry page; support sees the rows, a developer none', async () => {
      const admin = as('sysadmin');
      await admin.goto(`${server.url}/ui/registry/acme/hello`);
      await shot(admin, 'registry-flow');
      await admin.click('text=Turn tracing on');
      await admin.waitForSelector('text=tracing of acme/hello is now on');
      assert.ok(svc(sandbox, ['audit', '--tenant', 'acme', '--db', sandbox.db]).stdout.includes('trace_enabled'));
      const res = await fetch(`${server.url}/flows/acme/hello/run`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'x-correlation-id': 'ui-trace-1',
        },
        body: '{"who": "ada"}',
      });
      assert.equal(res.status, 200);
      await waitForLogRows(sandbox, { correlation_id: 'ui-trace-1', event: 'step_traced' }, 2);
      const support = as('support');
      await support.goto(`${server.url}/ui/traces?correlation_id=ui-trace-1`);
      const text = await support.locator('table').innerText();
      assert.match(text, /step_traced[\s\S]*received[\s\S]*step_traced[\s\S]*echo/);
      // The delivery as a svc test example: a download of the support role's session (docs/testing.md).
      const save = support.locator('a', { hasText: 'Save as an example of acme/hello (.test.md)' });
      const href = await save.getAttribute('href');
      assert.equal(href, '/ui/traces/example?tenant=acme&flow=hello&correlation_id=ui-trace-1');
      const example = await support.request.get(`${server.url}${href}`);
      assert.equal(example.status(), 200);
      assert.equal(example.headers()['content-disposition'], 'attachment; filename="hello.test.md"');
      assert.match(
        await example.text(),
        /## Example: recorded delivery ui-trace-1[\s\S]*input:\n {2}who: ada[\s\S]*body:\n {4}hello: ada/,
      );
      await shot(support, 'traces');
      // Each trace row names its delivery, a link to its story; the story links the flow's Registry page.
      const ids = await support.locator('main tbody tr td:nth-child(4)').allInnerTexts();
      assert.ok(ids.length >= 2 && ids.every((id) => id === 'ui-trace-1'), `correlation ids: ${ids.join()}`);
      await support.locator('main tbody tr').first().getByRole('link', { name: 'ui-trace-1' }).click();
      await support.waitForURL(`${server.url}/ui/executions/ui-trace-1`);
      await support.getByRole('link', { name: 'acme/hello' }).click();
      await support.waitForURL(`${server.url}/ui/registry/acme/hello`);
      const dev = await as('developer').goto(`${server.url}/ui/traces?correlation_id=ui-trace-1`);
      assert.equal(dev?.status(), 403);
      await as('developer').goto(`${server.url}/ui/executions/ui-trace-1`);
      const story = await as('developer').locator('table').innerText();
      assert.match(story, /received[\s\S]*completed/);
      assert.doesNotMatch(story, /step_traced/, 'the executions page never shows trace rows');
      assert.equal(
        await as('developer').getByRole('link', { name: 'acme/hello' }).getAttribute('href'),
        '/ui/registry/acme/hello',
      );
      await shot(as('developer'), 'delivery');
    });

    it('a dead letter replayed from the Queues page is processed', async () => {
      // Version 1 refuses n <= 5, and a refused message is dead-lettered at once (queue_max_attempts 1).
      const bad = await fetch(`${server.url}/flows/acme/picky/enqueue`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-correlation-id': 'ui-dlq-2' },
        body: '{"n": 1}',
      });
      assert.equal(bad.status, 202);
      await waitForLogRows(sandbox, { correlation_id: 'ui-dlq-2', event: 'dlq_moved' });
      deployFlow(
        sandbox,
        flow(
          'acme',
          'picky',
          'queue_max_attempts: 1',
          '## Step: check\n```validate\nctx.input.n > 0 | n must be positive | semantic\n```',
        ),
        { version: '2' },
      );
      const page = as('support');
      await page.goto(`${server.url}/ui/queues`);
      await shot(page, 'queues');
      await page.getByRole('button', { name: 'Replay', exact: true }).click();
      await page.waitForSelector('text=replayed dead letter');
      await waitFor(
        'the replayed message processed',
        () => logRows(sandbox, { flow: 'picky', event: 'queue_processed' }).length >= 1 || undefined,
      );
      assert.equal(await page.locator('text=No dead letters.').count(), 1);
      await page.goto(`${server.url}/ui/queues`);
      assert.match(
        await page.locator('tr', { hasText: 'acme/picky' }).first().innerText(),
        /pid \d+ \(this server\)/,
        'the queue shows which process runs its worker',
      );
      // The Executions page's Deliveries view: the dead letter and its replay, one row each.
      await page.goto(`${server.url}/ui/executions?flow=picky`);
      const picky = await page.locator('main tbody tr').allInnerTexts();
      assert.match(picky[0] ?? '', /acme\/picky\s+queue\s+succeeded\s+200\s+\d+\.\d (ms|s)/);
      assert.match(picky.at(-1) ?? '', /acme\/picky\s+queue\s+dead_lettered\s+\d+\.\d (ms|s)\s+check\s+ui-dlq-2/);
      await page.goto(`${server.url}/ui/executions`);
      await shot(page, 'executions');
    });

    it('the Audit page lists a chain newest first, as it says', async () => {
      const page = as('sysadmin');
      await page.goto(`${server.url}/ui/audit?tenant=acme`);
      assert.match(await page.locator('main p.muted').first().innerText(), /entries, newest first/);
      const seqs = (await page.locator('main tbody tr td:first-child').allInnerTexts()).map(Number);
      assert.ok(seqs.length >= 2, `entries: ${seqs.join()}`);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => b - a),
      );
    });

    it('a filtered selection of dead letters is discarded in bulk, one audited action each', async () => {
      for (const id of ['ui-bulk-1', 'ui-bulk-2']) {
        const res = await fetch(`${server.url}/flows/acme/picky/enqueue`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-correlation-id': id },
          body: '{"n": -1}',
        });
        assert.equal(res.status, 202);
        await waitForLogRows(sandbox, { correlation_id: id, event: 'dlq_moved' });
      }
      const page = as('sysadmin');
      await page.goto(`${server.url}/ui/queues?tenant=acme&flow=picky`);
      await page.click('text=Discard all 2 shown');
      await page.waitForSelector('text=discarded 2 dead letter(s)');
      const audit = svc(sandbox, ['audit', '--tenant', 'acme', '--json', '-l', '100', '--db', sandbox.db]).stdout;
      assert.equal((audit.match(/queue\.message\.discarded/g) ?? []).length, 2);
      assert.equal((audit.match(/queue\.message\.replayed/g) ?? []).length, 1, 'the replay before was audited too');
    });

    it('a sysadmin adds a UI user on the Users page; disabling the user ends their session at once', async () => {
      const admin = as('sysadmin');
      await admin.goto(`${server.url}/ui/users`);
      await admin.fill('input[name=username]', 'dora');
      await admin.selectOption('select[name=role]', 'developer');
      await admin.fill('input[name=password]', PASSWORD);
      await admin.click('text=Add user');
      await admin.waitForSelector('text=added UI user dora (developer)');
      await shot(admin, 'users');
      const dora = await (await browser.newContext()).newPage();
      await dora.goto(`${server.url}/ui/login`);
      await dora.fill('input[name=username]', 'dora');
      await dora.fill('input[name=password]', PASSWORD);
      await dora.click('button[type=submit]');
      await dora.waitForURL(`${server.url}/ui`);
      await admin.locator('tr', { hasText: 'dora' }).locator('text=Disable').click();
      await admin.waitForSelector('text=UI user dora disabled');
      await dora.goto(`${server.url}/ui/registry`);
      assert.match(dora.url(), /\/ui\/login$/);
      const denied = await as('support').goto(`${server.url}/ui/users`);
      assert.equal(denied?.status(), 403);
    });

    it('a key created on the Keys page works on /run at once; revoked there, it gets 401 at once', async () => {
      const page = as('sysadmin');
      await page.goto(`${server.url}/ui/keys`);
      await page.fill('input[name=label]', 'from-the-ui');
      await page.click('text=Create key');
      const raw = (await page.locator('#new-key').innerText()).trim();
      assert.match(raw, /^svk_[0-9a-f]{32}$/);
      const call = () =>
        fetch(`${server.url}/flows/acme/hello/run`, {
          method: 'POST',
          headers: { authorization: `Bearer ${raw}`, 'content-type': 'application/json' },
          body: '{"who": "ui"}',
        });
      assert.equal((await call()).status, 200);
      await page.goto(`${server.url}/ui/keys`);
      await shot(page, 'keys');
      const row = page.locator('tr', { hasText: 'from-the-ui' });
      await row.locator('text=Revoke').click();
      await page.waitForSelector('text=revoked API key');
      assert.equal((await call()).status, 401);
    });

    it('a setting that does not parse is refused with the reason and nothing is saved', async () => {
      const page = as('sysadmin');
      await page.goto(`${server.url}/ui/settings`);
      const row = page.locator('tr', { hasText: 'log_retention_days' });
      await row.locator('input[name=value]').fill('ten');
      await row.locator('text=Save').click();
      assert.match(await page.locator('[role=alert]').innerText(), /needs a whole number of at least 1/);
      await page.goto(`${server.url}/ui/settings`);
      await shot(page, 'settings');
      assert.equal(
        await page.locator('tr', { hasText: 'log_retention_days' }).locator('input[name=value]').inputValue(),
        '',
      );
    });

    it('the Certificates page lists the registry with its statuses', async () => {
      const page = as('developer');
      await page.goto(`${server.url}/ui/certificates`);
      assert.match(await page.locator('tr', { hasText: 'partner' }).innerText(), /expires in 1[01] days/);
      await shot(page, 'certificates');
    });

    it('logout ends the session: the old cookie opens nothing any more', async () => {
      const { context, page } = sessions.get('developer')!;
      const cookies = await context.cookies();
      await page.goto(`${server.url}/ui`);
      await page.click('text=Log out');
      await page.waitForURL(`${server.url}/ui/login`);
      const replayed = await browser.newContext();
      await replayed.addCookies(cookies);
      const again = await replayed.newPage();
      await again.goto(`${server.url}/ui/registry`);
      assert.match(again.url(), /\/ui\/login$/);
      await replayed.close();
    });
  },
);

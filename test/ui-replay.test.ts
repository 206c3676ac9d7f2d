/**
 * The Replay page (issue 38) in real headless Chromium against the real `svc serve`: deliveries
 * recorded with tracing on (a loopback backend, a card number the log masks), then a support user
 * uploads candidates: the same file is the same for every delivery; a changed answer differs, with
 * the recorded and the candidate's value side by side (masked as the log keeps them, markup shown
 * as text); a file that does not compile is refused with its diagnostics. A developer or a sysadmin
 * gets 403, by the page and by a forged multipart post with a valid CSRF token. The backend gets no
 * request from any replay. The screenshot goes to docs/ui/replay.png.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  CARD,
  QUOTE_ANSWER,
  quoteFlow,
  recordQuotes,
  startPriceBackend,
  writeHome,
  type PriceBackend,
} from './helpers/quote-recording.js';
import { createTenant } from './helpers/registry-setup.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { rawRequest } from './helpers/raw-http.js';
import { uiLogin } from './helpers/ui-login.js';

const CHROMIUM = '/usr/bin/chromium';
const DOCS_SHOTS = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/ui');
const PASSWORD = 'correct horse battery staple';

describe(
  'the Replay page',
  { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install -y chromium)` },
  () => {
    const sb = makeSandbox();
    const shots = ON_PG_STORE ? join(sb.home, 'shots') : DOCS_SHOTS;
    let backend: PriceBackend;
    let server: ServerProcess;
    let browser: Browser;
    const text = (answer: string) => quoteFlow(backend.url, answer);
    const ORIGINAL = QUOTE_ANSWER;
    const write = (name: string, body: string) => writeHome(sb, name, body);
    const calls = () => backend.calls();

    async function logIn(username: string): Promise<Page> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${server.url}/ui/login`);
      await page.fill('input[name=username]', username);
      await page.fill('input[name=password]', PASSWORD);
      await page.click('button[type=submit]');
      await page.waitForURL(`${server.url}/ui`);
      return page;
    }

    /** The support user's replay of `candidate` (a file path) over the last hour. */
    async function replayAs(page: Page, candidate: string): Promise<number> {
      await page.goto(`${server.url}/ui/replay`);
      await page.fill('input[name=tenant]', 'acme');
      await page.fill('input[name=flow]', 'quote');
      await page.setInputFiles('input[name=candidate]', candidate);
      const [answer] = await Promise.all([page.waitForNavigation(), page.click('form[action="/ui/replay"] button')]);
      return answer!.status();
    }

    before(async () => {
      mkdirSync(shots, { recursive: true });
      backend = await startPriceBackend();
      createTenant(sb, 'acme');
      assert.equal(svc(sb, ['deploy', write('quote.flow.md', text(ORIGINAL)), '-v', '1', '--db', sb.db]).code, 0);
      assert.equal(svc(sb, ['trace', 'enable', '--tenant', 'acme', '--flow', 'quote', '--db', sb.db]).code, 0);
      server = await startServer(sb, ['--no-auth'], { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: PASSWORD });
      for (const role of ['support', 'developer'] as const) {
        const r = svc(sb, ['ui', 'user', 'add', '--username', role, '--role', role, '--db', sb.db], {
          input: `${PASSWORD}\n`,
        });
        assert.equal(r.code, 0, r.stderr);
      }
      await recordQuotes(sb, server.url, ['q-1', 'q-2', 'q-3']);
      assert.equal(calls(), 3);
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
      });
    });
    after(async () => {
      await browser?.close();
      await server?.stop();
      await backend?.close();
      sb.cleanup();
    });

    it('a support user replays the deployed file: every delivery the same, nothing sent', async () => {
      const page = await logIn('support');
      assert.equal(await page.locator('header a[href="/ui/replay"]').count(), 1);
      // From the flow's Registry page, the form comes with the flow filled in.
      await page.goto(`${server.url}/ui/registry/acme/quote`);
      await page.click('text=replay a candidate');
      assert.equal(await page.inputValue('input[name=tenant]'), 'acme');
      assert.equal(await page.inputValue('input[name=flow]'), 'quote');
      assert.equal(await replayAs(page, join(sb.home, 'quote.flow.md')), 200);
      assert.equal(await page.locator('[role=status]').innerText(), '3 deliveries: 3 same, 0 differ, 0 not replayable');
      assert.deepEqual(await page.locator('tbody td:nth-child(3)').allInnerTexts(), ['same', 'same', 'same']);
      assert.equal(calls(), 3);
    });

    it('a changed answer differs: both values side by side, masked, markup as text', async () => {
      const page = await logIn('support');
      const changed = write(
        'changed.flow.md',
        text('{"id": "{{ ctx.input.id }}", "total": {{ ctx.input.price }}, "note": "<script>alert(1)</script>"}'),
      );
      assert.equal(await replayAs(page, changed), 200);
      assert.equal(await page.locator('[role=status]').innerText(), '3 deliveries: 0 same, 3 differ, 0 not replayable');
      const first = page.locator('section.replay-diff[data-delivery="q-1"]');
      const rows = await first
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim())));
      assert.deepEqual(rows, [
        ['body.price', '12.5', '(nothing)'],
        ['body.total', '(nothing)', '12.5'],
        ['body.note', '(nothing)', '"<script>alert(1)</script>"'],
      ]);
      assert.equal(await page.locator('main script').count(), 0, 'a value is never markup');
      const all = await page.content();
      assert.ok(!all.includes(CARD), 'the masked card number is shown nowhere');
      await page.locator('section.replay-diff[data-delivery="q-1"] details summary').click();
      await page.screenshot({ path: join(shots, 'replay.png'), fullPage: true });
      assert.equal(calls(), 3);
    });

    it('a candidate that does not compile is refused with its diagnostics; nothing runs', async () => {
      const page = await logIn('support');
      const broken = write('broken.flow.md', text(ORIGINAL).replace('method: GET', 'method: GET\nfrobnicate: 1'));
      assert.equal(await replayAs(page, broken), 422);
      const alert = await page.locator('[role=alert]').innerText();
      assert.match(alert, /does not compile; nothing was replayed/);
      assert.match(alert, /broken\.flow\.md:\d+/);
      assert.equal(calls(), 3);
    });

    it('a developer and a sysadmin get 403, by the page and by a forged post with a valid CSRF token', async () => {
      for (const username of ['developer', 'admin']) {
        const cookie = await uiLogin(server.url, username, PASSWORD);
        const get = await fetch(`${server.url}/ui/replay`, { headers: { cookie } });
        assert.equal(get.status, 403, username);
        const home = await (await fetch(`${server.url}/ui`, { headers: { cookie } })).text();
        const csrf = /name="_csrf" value="([^"]+)"/.exec(home)![1]!;
        const form = new FormData();
        form.set('_csrf', csrf);
        form.set('tenant', 'acme');
        form.set('flow', 'quote');
        form.set('candidate', new Blob([text(ORIGINAL)]), 'quote.flow.md');
        const post = await fetch(`${server.url}/ui/replay`, { method: 'POST', headers: { cookie }, body: form });
        assert.equal(post.status, 403, username);
        assert.doesNotMatch(await post.text(), /deliveries:/);
      }
      assert.equal(calls(), 3);
    });

    it('a hostile upload gets a clear refusal: no CSRF token, too large, not multipart at all', async () => {
      const cookie = await uiLogin(server.url, 'support', PASSWORD);
      const home = await (await fetch(`${server.url}/ui/replay`, { headers: { cookie } })).text();
      const csrf = /name="_csrf" value="([^"]+)"/.exec(home)![1]!;
      const post = (body: FormData | string, headers: Record<string, string> = {}) =>
        fetch(`${server.url}/ui/replay`, { method: 'POST', headers: { cookie, ...headers }, body });
      const formWith = (candidate: string, token?: string) => {
        const form = new FormData();
        if (token !== undefined) form.set('_csrf', token);
        form.set('tenant', 'acme');
        form.set('flow', 'quote');
        form.set('candidate', new Blob([candidate]), 'quote.flow.md');
        return form;
      };
      assert.equal((await post(formWith(text(ORIGINAL)))).status, 403);
      // Declared past the ceiling: refused before a byte of it is read (fetch, still writing, would
      // see the connection closed under it; the head alone on a socket reads the answer).
      const big = await rawRequest(
        Number(new URL(server.url).port),
        `POST /ui/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: ${1024 * 1024 + 1}\r\n\r\n`,
      );
      assert.equal(big.status, 413, big.raw);
      const broken = await post(`--b\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}`, {
        'content-type': 'multipart/form-data; boundary=b',
      });
      assert.equal(broken.status, 400);
      assert.match(await broken.text(), /malformed multipart body/);
      const ok = await post(formWith(text(ORIGINAL), csrf));
      assert.equal(ok.status, 200);
      assert.match(await ok.text(), /3 deliveries: 3 same/);
      assert.equal(calls(), 3);
    });
  },
);

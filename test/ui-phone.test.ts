/**
 * The management UI at phone width (issue "see it", item 3), in real headless Chromium against the
 * real `svc serve`: at 375 x 800 no page of the navigation scrolls sideways (wide tables scroll
 * inside their own box; the navigation wraps). Screenshots of the Overview and Executions pages go
 * to docs/ui/phone-*.png (the PostgreSQL pass keeps its own in the sandbox).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserLogIn, launchChromium, shotsDir, UI_PASSWORD, WITHOUT_CHROMIUM } from './helpers/ui-browser.js';
import { waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

const PHONE = { width: 375, height: 800 };

describe('the management UI at phone width', { skip: WITHOUT_CHROMIUM }, () => {
  const sandbox = makeSandbox();
  const shots = shotsDir(sandbox);
  let server: ServerProcess;
  let browser: Browser;

  const logIn = (username: string): Promise<Page> => browserLogIn(browser, server.url, username, PHONE);

  /** How far the page itself scrolls sideways: its content's width past the window's (0: none). */
  const overflowOf = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');

  /** The pages the account's navigation links to. */
  const navOf = async (page: Page) => {
    await page.goto(`${server.url}/ui`);
    return page.locator('header a').evaluateAll((as) => as.map((a) => a.getAttribute('href')!));
  };

  before(async () => {
    mkdirSync(shots, { recursive: true });
    createTenant(sandbox, 'acme', { displayName: 'Acme Corporation Europe' });
    const key = createKey(sandbox, 'acme');
    deployFlow(
      sandbox,
      flow('acme', 'hello', 'log_level: full', '## Step: echo\n```ntd\n{"hello": "{{ ctx.input.who }}"}\n```'),
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
    for (const role of ['admin', 'support'] as const) {
      const r = svc(
        sandbox,
        ['ui', 'user', 'add', '--username', role, '--role', role === 'admin' ? 'sysadmin' : role, '--db', sandbox.db],
        { input: `${UI_PASSWORD}\n` },
      );
      assert.equal(r.code, 0, r.stderr);
    }
    server = await startServer(sandbox);
    // Rows with long values in the wide tables: executions, a dead letter with its payload.
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const run = await fetch(`${server.url}/flows/acme/hello/run`, {
      method: 'POST',
      headers: { ...headers, 'x-correlation-id': 'phone-run-with-a-rather-long-correlation-id-0001' },
      body: '{"who": "ada"}',
    });
    assert.equal(run.status, 200);
    const bad = await fetch(`${server.url}/flows/acme/picky/enqueue`, {
      method: 'POST',
      headers: { ...headers, 'x-correlation-id': 'phone-dead-letter-0001' },
      body: '{"n": 1, "note": "a payload wide enough to need more than a phone screen"}',
    });
    assert.equal(bad.status, 202);
    await waitForLogRows(sandbox, { correlation_id: 'phone-dead-letter-0001', event: 'dlq_moved' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    sandbox.cleanup();
  });

  it('no page of the navigation scrolls sideways at 375 px, for a sysadmin and for support (Traces, Replay)', async () => {
    const seen = new Set<string>();
    for (const user of ['admin', 'support']) {
      const page = await logIn(user);
      const nav = await navOf(page);
      assert.ok(nav.length >= (user === 'admin' ? 10 : 9), `${user}'s navigation: ${nav.join(' ')}`);
      for (const path of nav) {
        if (seen.has(path)) continue;
        seen.add(path);
        const res = await page.goto(`${server.url}${path}`);
        assert.equal(res?.status(), 200, path);
        assert.equal(await page.evaluate<number>('window.innerWidth'), PHONE.width);
        assert.equal(await overflowOf(page), 0, `${path} scrolls sideways by that many px`);
      }
      // One delivery's story too: its table of rows is among the widest.
      await page.goto(`${server.url}/ui/executions/phone-run-with-a-rather-long-correlation-id-0001`);
      assert.equal(await overflowOf(page), 0, 'one delivery scrolls sideways');
      await page.context().close();
    }
    assert.ok(seen.has('/ui/traces') && seen.has('/ui/users'), [...seen].join(' '));
  });

  it('a wide table scrolls inside its own box, and the navigation wraps onto the page', async () => {
    const page = await logIn('admin');
    await page.goto(`${server.url}/ui/queues`);
    const box = page.locator('div.scroll', { has: page.locator('table', { hasText: 'phone' }) }).first();
    assert.ok(
      await box.evaluate((el) => el.scrollWidth > el.clientWidth),
      'the dead letters table is wider than the screen, and scrolls in its box',
    );
    const header = await page.locator('header').evaluate((el) => ({ w: el.scrollWidth, h: el.clientHeight }));
    assert.ok(header.w <= PHONE.width, `header ${header.w} px wide`);
    await page.goto(`${server.url}/ui`);
    await page.screenshot({ path: join(shots, 'phone-overview.png'), fullPage: true });
    await page.goto(`${server.url}/ui/executions`);
    await page.screenshot({ path: join(shots, 'phone-executions.png'), fullPage: true });
    await page.context().close();
  });
});

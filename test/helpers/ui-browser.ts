/** Debian's Chromium driven by playwright-core for the UI's browser tests: launch, log in, where screenshots go. */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ON_PG_STORE, type Sandbox } from './svc.js';

export const CHROMIUM = '/usr/bin/chromium';
/** A describe's `skip` on a machine without Chromium (the reason says how to install it). */
export const WITHOUT_CHROMIUM = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is not installed (apt-get install -y chromium)`;
/** The password the tests give every UI account they make. */
export const UI_PASSWORD = 'correct horse battery staple';

const DOCS_SHOTS = resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/ui');

/** docs/ui for the SQLite pass; the PostgreSQL pass keeps its pictures in the sandbox, so one run writes docs/ui once. */
export function shotsDir(sandbox: Sandbox): string {
  return ON_PG_STORE ? join(sandbox.home, 'shots') : DOCS_SHOTS;
}

/** Chromium headless, with the flags this machine's closed network needs. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
}

/** A new browser context logged in to the UI at `url` as `username`, on the Overview. */
export async function browserLogIn(
  browser: Browser,
  url: string,
  username: string,
  viewport: { width: number; height: number } = { width: 1280, height: 900 },
): Promise<Page> {
  const page = await (await browser.newContext({ viewport })).newPage();
  await page.goto(`${url}/ui/login`);
  await page.fill('input[name=username]', username);
  await page.fill('input[name=password]', UI_PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForURL(`${url}/ui`);
  return page;
}

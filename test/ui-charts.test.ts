/**
 * The activity charts in real Chromium against a real `svc serve`: the empty state before anything
 * ran, then charts whose drawn values (each series' data-values) add up to the deliveries sent, on
 * the Overview (all flows, busiest first with sparklines) and on a flow's page (that flow only).
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createKey, createTenant, deployFlows, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';
import { browserLogIn, launchChromium, shotsDir, UI_PASSWORD, WITHOUT_CHROMIUM } from './helpers/ui-browser.js';

const CHECKED =
  '## Step: greet\n```validate\nhas(ctx.input.name) | name is required | syntactic\n```\n```ntd\n{"hi": "{{ ctx.input.name }}"}\n```';

/** The values a chart drew for a series, summed (empty values are periods that measured nothing). */
async function drawnSum(page: Page, chart: string, series: string): Promise<number> {
  const values = await page
    .locator(`svg.chart[aria-label="${chart}"] g.series[data-series="${series}"]`)
    .getAttribute('data-values');
  assert.ok(values !== null, `no ${series} series in ${chart}`);
  return values
    .split(',')
    .filter((v) => v !== '')
    .reduce((a, v) => a + Number(v), 0);
}

describe('activity charts: Overview and a flow page', { skip: WITHOUT_CHROMIUM }, () => {
  const sandbox = makeSandbox();
  const shots = shotsDir(sandbox);
  let server: ServerProcess;
  let browser: Browser;
  let page: Page;
  let key = '';

  before(async () => {
    mkdirSync(shots, { recursive: true });
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    deployFlows(sandbox, [flow('acme', 'greeter', '', CHECKED), flow('acme', 'quiet', '', CHECKED)]);
    server = await startServer(sandbox, [], { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: UI_PASSWORD });
    browser = await launchChromium();
    page = await browserLogIn(browser, server.url, 'admin');
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    sandbox.cleanup();
  });

  it('before anything ran, the Overview and a flow page say what will appear', async () => {
    await page.goto(`${server.url}/ui`);
    assert.match(await page.locator('#activity-empty').innerText(), /Nothing ran in the last day yet/);
    assert.match(await page.locator('main').innerText(), /No flow ran in the last hour/);
    await page.goto(`${server.url}/ui/registry/acme/greeter`);
    assert.match(await page.locator('#activity-empty').innerText(), /appear here per minute and per hour/);
  });

  it('the charts draw the deliveries and failures sent, per minute and per hour, all flows and one', async () => {
    const run = (name: string, body: unknown) =>
      fetch(`${server.url}/flows/acme/${name}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (let i = 0; i < 4; i++) assert.equal((await run('greeter', { name: `n${i}` })).status, 200);
    assert.equal((await run('greeter', {})).status, 400);
    for (let i = 0; i < 2; i++) assert.equal((await run('quiet', { name: 'q' })).status, 200);
    // The rollups reach the store every 5 s (serve/rollups.ts).
    const deadline = Date.now() + 20_000;
    for (;;) {
      await page.goto(`${server.url}/ui`);
      if ((await page.locator('#activity').count()) === 1) {
        if ((await drawnSum(page, 'All flows: deliveries and failures (last hour, per minute)', 'deliveries')) === 7)
          break;
      }
      assert.ok(Date.now() < deadline, 'the charts never showed the 7 deliveries');
      await new Promise((r) => setTimeout(r, 500));
    }
    const hour = 'All flows: deliveries and failures (last hour, per minute)';
    const day = 'All flows: deliveries and failures (last day, per hour)';
    assert.equal(await drawnSum(page, hour, 'failures'), 1);
    assert.equal(await drawnSum(page, day, 'deliveries'), 7);
    assert.equal(await drawnSum(page, day, 'failures'), 1);
    assert.ok((await drawnSum(page, 'All flows: latency (last hour, per minute)', 'p95')) > 0);
    const perMinute = await page
      .locator(`svg.chart[aria-label="${hour}"] g.series[data-series="deliveries"]`)
      .getAttribute('data-values');
    assert.equal(perMinute!.split(',').length, 60, 'one value per minute of the hour');
    assert.equal(await page.locator(`svg.chart[aria-label="${hour}"] text.x-tick`).count(), 5);
    // Busiest first, with a sparkline each whose points add up to the flow's deliveries.
    const busiest = await page.locator('table:has(th:text("Per minute")) tbody tr').evaluateAll((rows) =>
      rows.map((r) => ({
        flow: r.querySelector('td a')!.textContent,
        count: r.querySelectorAll('td')[1]!.textContent,
        spark: r
          .querySelector('svg.sparkline polyline')!
          .getAttribute('data-values')!
          .split(',')
          .reduce((a: number, v: string) => a + Number(v), 0),
      })),
    );
    assert.deepEqual(busiest, [
      { flow: 'acme/greeter', count: '5', spark: 5 },
      { flow: 'acme/quiet', count: '2', spark: 2 },
    ]);
    await page.screenshot({ path: join(shots, 'overview-activity.png'), fullPage: true });
    await page.goto(`${server.url}/ui/registry/acme/greeter`);
    const flowHour = 'acme/greeter: deliveries and failures (last hour, per minute)';
    assert.equal(await drawnSum(page, flowHour, 'deliveries'), 5);
    assert.equal(await drawnSum(page, flowHour, 'failures'), 1);
    await page.locator('#activity').screenshot({ path: join(shots, 'flow-activity.png') });
  });

  it('the Queues page charts each queue: backlog and dead letters sampled, processed per minute', async () => {
    await page.goto(`${server.url}/ui/queues`);
    assert.match(await page.locator('#queue-charts-empty').innerText(), /No queue figures in the last hour yet/);
    const enqueue = (body: unknown) =>
      fetch(`${server.url}/flows/acme/greeter/enqueue`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const body of [{ name: 'a' }, { name: 'b' }, {}]) assert.equal((await enqueue(body)).status, 202);
    const chart = 'acme/greeter: backlog, processed, dead letters (last hour, per minute)';
    const values = async (series: string) =>
      (await page
        .locator(`svg.chart[aria-label="${chart}"] g.series[data-series="${series}"]`)
        .getAttribute('data-values'))!.split(',');
    // The failing message is dead-lettered after its 3 attempts (1 s, then 2 s apart); samples come every 15 s.
    const deadline = Date.now() + 40_000;
    for (;;) {
      await page.goto(`${server.url}/ui/queues`);
      if ((await page.locator(`svg.chart[aria-label="${chart}"]`).count()) === 1) {
        const processed = (await values('processed')).reduce((a, v) => a + Number(v || 0), 0);
        const dead = (await values('dead letters')).filter((v) => v !== '').at(-1);
        if (processed === 2 && dead === '1') break;
      }
      assert.ok(Date.now() < deadline, 'the queue chart never showed 2 processed and 1 dead letter');
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.equal((await values('backlog')).filter((v) => v !== '').at(-1), '0');
    assert.equal((await values('backlog')).length, 60);
    await page.locator('#queue-charts').screenshot({ path: join(shots, 'queues-chart.png') });
  });

  it('auto-refresh is off by default, and on asked reloads the page without any script, keeping its query', async () => {
    await page.goto(`${server.url}/ui/executions?tenant=acme`);
    assert.equal(await page.locator('meta[http-equiv="refresh"]').count(), 0);
    assert.match(await page.locator('p.refresh').innerText(), /Auto-refresh: off · 5 s · 30 s/);
    await page.locator('p.refresh a', { hasText: '5 s' }).click();
    await page.waitForURL(`${server.url}/ui/executions?tenant=acme&refresh=5`);
    assert.equal(
      await page.locator('meta[http-equiv="refresh"]').getAttribute('content'),
      '5; url=/ui/executions?tenant=acme&refresh=5',
    );
    // A browser with JavaScript off reloads it too: the meta refresh is HTML, not script.
    const noScript = await browser.newContext({
      javaScriptEnabled: false,
      storageState: await page.context().storageState(),
    });
    const bare = await noScript.newPage();
    let loads = 0;
    bare.on('load', () => loads++);
    await bare.goto(`${server.url}/ui/queues?refresh=5&notice=once`);
    const started = Date.now();
    while (loads < 2) {
      assert.ok(Date.now() - started < 15_000, 'the page never reloaded itself');
      await new Promise((r) => setTimeout(r, 250));
    }
    // The one-off notice is not repeated by the reload.
    assert.equal(bare.url(), `${server.url}/ui/queues?refresh=5`);
    assert.equal(await bare.locator('.notice').count(), 0);
    await noScript.close();
    for (const value of ['1', '5s', 'constructor']) {
      const refused = await page.request.get(`${server.url}/ui/queues?refresh=${value}`);
      assert.equal(refused.status(), 400, value);
      assert.match(await refused.text(), /refresh must be off or one of 5, 30 \(seconds\)/);
    }
    await page.goto(`${server.url}/ui/executions?tenant=acme&refresh=5`);
    await page.locator('p.refresh a', { hasText: 'off' }).click();
    await page.waitForURL(`${server.url}/ui/executions?tenant=acme`);
    assert.equal(await page.locator('meta[http-equiv="refresh"]').count(), 0);
  });
});

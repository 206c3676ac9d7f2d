/**
 * A flow's diagram, black-box: `svc flows show --format svg|mermaid|dot` through the built CLI,
 * the same drawings served by the UI, and the Registry page in real Chromium drawing each demo
 * flow's nodes and edges (asserted on the SVG's elements), per version, with links to the flows it
 * reaches and a hostile expression shown as text.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createKey, createTenant, deployFlow, deployFlows, flow, inForce } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { browserLogIn, launchChromium, shotsDir, UI_PASSWORD, WITHOUT_CHROMIUM } from './helpers/ui-browser.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const HOSTILE = 'ctx.input.items.filter(x, x.name != "</text><script>window.pwned = 1</script>")';

const demo = (name: string) => readFileSync(join(ROOT, 'examples', 'demo', `${name}.flow.md`), 'utf8');

/** What each demo flow's picture holds: its nodes (in drawing order) and its edges other than step order. */
const DEMO_DIAGRAMS: Record<string, { nodes: string[]; links: string[] }> = {
  'check-health': {
    nodes: ['door:http', 'door:queue', 'step:call', 'step:unreachable'],
    links: ['fault step:call step:unreachable'],
  },
  'fulfil-order': { nodes: ['door:http', 'door:queue', 'step:only-positive', 'step:record'], links: [] },
  heartbeat: { nodes: ['door:http', 'door:queue', 'door:cron', 'step:beat'], links: [] },
  hello: { nodes: ['door:http', 'door:queue', 'step:greet'], links: [] },
  'order-intake': {
    nodes: [
      'door:http',
      'door:queue',
      'guard',
      'step:check',
      'step:hand-off',
      'step:answer',
      'step:rejected',
      'flow:fulfil-order',
    ],
    links: ['publishes step:hand-off flow:fulfil-order', 'fault step:check step:rejected'],
  },
  'quote-soap': { nodes: ['door:http', 'door:queue', 'door:soap', 'step:quote'], links: [] },
};

describe(
  'a flow diagram: svc flows show --format, and the Registry page in a browser',
  { skip: WITHOUT_CHROMIUM },
  () => {
    const sandbox = makeSandbox();
    const shots = shotsDir(sandbox);
    let server: ServerProcess;
    let browser: Browser;
    let page: Page;
    const show = (...args: string[]) => svc(sandbox, ['flows', 'show', ...args, '--db', sandbox.db]);

    before(async () => {
      mkdirSync(shots, { recursive: true });
      createTenant(sandbox, 'demo');
      createTenant(sandbox, 'acme');
      deployFlows(sandbox, Object.keys(DEMO_DIAGRAMS).map(demo));
      // Version 2 adds a step before the fault section (a step after it would join the fault branch).
      const v2 = demo('order-intake').replace('## Fault:', '## Step: audit\n```ntd\n{"seen": true}\n```\n\n## Fault:');
      deployFlow(sandbox, v2, { version: '2' });
      const called = join(ROOT, 'examples', 'features', 'composition');
      deployFlows(sandbox, [
        readFileSync(join(ROOT, 'examples', 'features', 'composition.flow.md'), 'utf8'),
        ...readdirSync(called)
          .filter((n) => n.endsWith('.flow.md'))
          .map((n) => readFileSync(join(called, n), 'utf8')),
      ]);
      deployFlow(
        sandbox,
        flow('acme', 'hostile', '', `## Step: each\nforeach: ${HOSTILE}\n\`\`\`ntd\n{"n": 1}\n\`\`\``),
      );
      server = await startServer(sandbox, [], { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: UI_PASSWORD });
      browser = await launchChromium();
      page = await browserLogIn(browser, server.url, 'admin');
    });
    after(async () => {
      await browser?.close();
      await server?.stop();
      sandbox.cleanup();
    });

    /** The nodes and the non-step-order edges of the diagram on the page. */
    async function drawn(): Promise<{ nodes: string[]; links: string[] }> {
      return page.locator('#flow-diagram svg').evaluate((svg) => ({
        nodes: [...svg.querySelectorAll('g.node')].map((g) => g.getAttribute('data-node')!),
        links: [...svg.querySelectorAll('path.edge:not(.next)')].map(
          (p) => `${p.classList[1]} ${p.getAttribute('data-from')} ${p.getAttribute('data-to')}`,
        ),
      }));
    }

    for (const [name, expected] of Object.entries(DEMO_DIAGRAMS)) {
      it(`the Registry page of demo/${name} draws its doors, steps and links`, async () => {
        await page.goto(`${server.url}/ui/registry/demo/${name}?version=1`);
        assert.deepEqual(await drawn(), expected);
        const next = await page.locator('#flow-diagram svg path.edge.next').count();
        const doors = expected.nodes.filter((n) => n.startsWith('door:')).length;
        const column = expected.nodes.filter((n) => n === 'guard' || n.startsWith('step:')).length;
        const fault = expected.links.filter((l) => l.startsWith('fault')).length;
        // Each door into the first node, then one edge between neighbours (the fault branch's first step has its own edge).
        assert.equal(next, doors + column - 1 - fault);
      });
    }

    it('each version has its own picture; the latest is drawn without ?version', async () => {
      await page.goto(`${server.url}/ui/registry/demo/order-intake`);
      assert.ok((await drawn()).nodes.includes('step:audit'));
      assert.match(await page.locator('h2', { hasText: 'Diagram' }).innerText(), /version 2 \(latest\)/);
      await page.goto(`${server.url}/ui/registry/demo/order-intake?version=1`);
      assert.ok(!(await drawn()).nodes.includes('step:audit'));
    });

    it('a called, split, forked or published-to flow links to its own page', async () => {
      await page.goto(`${server.url}/ui/registry/acme/composition`);
      const links = await page
        .locator('#flow-diagram svg a')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      assert.deepEqual(links, [
        '/ui/registry/acme/enrich-customer',
        '/ui/registry/acme/price-line',
        '/ui/registry/acme/notify-email',
        '/ui/registry/acme/notify-sms',
      ]);
      await page.locator('#flow-diagram g[data-node="flow:price-line"]').click();
      await page.waitForURL(`${server.url}/ui/registry/acme/price-line`);
      assert.deepEqual((await drawn()).nodes, ['door:http', 'door:queue', 'step:check', 'step:price']);
      await page.goto(`${server.url}/ui/registry/acme/composition`);
      await page.locator('#flow-diagram').screenshot({ path: join(shots, 'flow-diagram.png') });
    });

    it('a hostile expression is drawn as text: no element is made of it and no script runs', async () => {
      await page.goto(`${server.url}/ui/registry/acme/hostile`);
      const badge = await page.locator('#flow-diagram g[data-badge="foreach"] text').textContent();
      assert.ok(badge!.startsWith('foreach ctx.input.items.filter(x, x.name != "</'), badge!);
      assert.equal(await page.locator('#flow-diagram script').count(), 0);
      assert.equal(await page.evaluate(() => (globalThis as { pwned?: number }).pwned), undefined);
      const title = await page.locator('#flow-diagram g[data-node="step:each"] > title').textContent();
      assert.ok(title!.includes(`foreach ${HOSTILE}`));
    });

    it('svc flows show --format prints the very drawings the UI serves', async () => {
      for (const format of ['svg', 'mermaid', 'dot']) {
        const cli = show('--tenant', 'demo', '--flow', 'order-intake', '--version', '1', '--format', format);
        assert.equal(cli.code, 0, cli.stderr);
        const served = await page.request.get(
          `${server.url}/ui/registry/demo/order-intake/diagram?version=1&format=${format}`,
        );
        assert.equal(served.status(), 200);
        assert.equal(await served.text(), cli.stdout, format);
      }
      const svgPage = await page.request.get(`${server.url}/ui/registry/demo/order-intake/diagram`);
      assert.match(svgPage.headers()['content-type']!, /^image\/svg\+xml/);
      assert.match(svgPage.headers()['content-disposition']!, /filename="demo-order-intake-2\.svg"/);
      // A version that is not the latest is drawn without live numbers: the same document, inline.
      const html = await (await page.request.get(`${server.url}/ui/registry/demo/order-intake?version=1`)).text();
      const v1 = await page.request.get(`${server.url}/ui/registry/demo/order-intake/diagram?version=1`);
      assert.ok(html.includes(await v1.text()), 'the page holds the SVG document byte for byte');
    });

    it('live numbers: deliveries per door, runs and failures per step, counts matching the deliveries sent', async () => {
      const key = createKey(sandbox, 'demo');
      const send = (door: 'run' | 'enqueue', body: unknown) =>
        fetch(`${server.url}/flows/demo/hello/${door}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      // On --store the node learns of the new key a few milliseconds after the command returned: a
      // 401 until then, refused at the gate, counts as no delivery.
      const [first, ...rest] = [{ name: 'Ada' }, { name: 'Bo' }, { name: 'Cy' }, {}, { name: '' }];
      await inForce(
        () => send('run', first),
        (r) => r.status !== 401,
      );
      for (const body of rest) await send('run', body);
      assert.equal((await send('enqueue', { name: 'Di' })).status, 202);
      const numbers = async () =>
        page.locator('#flow-diagram svg text.numbers').evaluateAll((ts) => ts.map((t) => t.textContent));
      // The rollups reach the store every 5 s (serve/rollups.ts): wait for them.
      const deadline = Date.now() + 20_000;
      let seen: (string | null)[] = [];
      for (;;) {
        await page.goto(`${server.url}/ui/registry/demo/hello`);
        seen = await numbers();
        if (seen[0] === '5 deliveries' && seen[1] === '1 delivery') break;
        assert.ok(Date.now() < deadline, `live numbers never showed the deliveries: ${JSON.stringify(seen)}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      assert.equal(seen.length, 3);
      assert.match(seen[2]!, /^6 runs · 2 failed · p95 \d+(\.\d)? ms · failed most$/);
      assert.equal(await page.locator('#flow-diagram g.failed-most').getAttribute('data-node'), 'step:greet');
      assert.match(await page.locator('p.window').innerText(), /Live numbers of the last 15m · 1h · 6h · 24h/);
      await page.locator('#flow-diagram').screenshot({ path: join(shots, 'flow-diagram-live.png') });
      // Another window reads the same rollups; a window the page does not know is refused.
      await page.goto(`${server.url}/ui/registry/demo/hello?window=24h`);
      assert.equal((await numbers())[0], '5 deliveries');
      const bad = await page.request.get(`${server.url}/ui/registry/demo/hello?window=yesterday`);
      assert.equal(bad.status(), 400);
      assert.match(await bad.text(), /window must be one of 15m, 1h, 6h, 24h/);
      const proto = await page.request.get(`${server.url}/ui/registry/demo/hello?window=constructor`);
      assert.equal(proto.status(), 400);
    });

    it('a flow page links to its executions, failed runs, queue and dead letters; a queue links back to its flow', async () => {
      await page.goto(`${server.url}/ui/registry/demo/hello`);
      const links = await page
        .locator('p.links a')
        .evaluateAll((as) => as.map((a) => `${a.textContent} ${a.getAttribute('href')}`));
      assert.deepEqual(links, [
        'Its executions /ui/executions?tenant=demo&flow=hello',
        'its failed runs /ui/executions?tenant=demo&flow=hello&event=completed&status=400-599',
        'its queue /ui/queues?tenant=demo&flow=hello',
        'its dead letters /ui/queues?tenant=demo&flow=hello#dead-letters',
      ]);
      await page.locator('p.links a', { hasText: 'its queue' }).click();
      await page.waitForURL(`${server.url}/ui/queues?tenant=demo&flow=hello`);
      // Only this flow's queue is listed (the demo set has others once they ran), and it links back.
      const queueLinks = await page
        .locator('table a[href^="/ui/registry/"]')
        .evaluateAll((as) => as.map((a) => a.textContent));
      assert.deepEqual(queueLinks, ['demo/hello']);
      await page.locator('table a', { hasText: 'demo/hello' }).first().click();
      await page.waitForURL(`${server.url}/ui/registry/demo/hello`);
      for (const bad of ['tenant=Bad%21', 'flow=%3Cscript%3E']) {
        const refused = await page.request.get(`${server.url}/ui/queues?${bad}`);
        assert.equal(refused.status(), 400, bad);
      }
    });

    it('the CLI and the UI refuse a format or version they do not have, and --format with --json', async () => {
      const png = show('--tenant', 'demo', '--flow', 'hello', '--format', 'png');
      assert.notEqual(png.code, 0);
      assert.match(png.stderr, /argument 'png' is invalid\. Allowed choices are svg, mermaid, dot/);
      const both = show('--tenant', 'demo', '--flow', 'hello', '--format', 'svg', '--json');
      assert.notEqual(both.code, 0);
      assert.match(both.stderr, /cannot be used with option '--json'/);
      const missing = show('--tenant', 'demo', '--flow', 'hello', '--version', '9', '--format', 'dot');
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /flow 'demo\/hello' has no version "9"; its versions: 1/);
      assert.equal(missing.stdout, '');
      const bad = await page.request.get(`${server.url}/ui/registry/demo/hello/diagram?format=png`);
      assert.equal(bad.status(), 400);
      assert.match(await bad.text(), /format must be one of svg, mermaid, dot/);
      const gone = await page.request.get(`${server.url}/ui/registry/demo/hello/diagram?version=9`);
      assert.equal(gone.status(), 404);
    });
  },
);

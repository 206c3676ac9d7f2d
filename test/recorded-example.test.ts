/**
 * From real traffic to a test (issue 37): a traced delivery with a call out, saved from the UI by
 * the support role as a `.test.md` example, runs under `svc test` with the recorded answer as its
 * stub and no call to the backend; a value the log masked stays masked and is listed, and the
 * example fails naming it until someone fills it in; another role gets 403.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTenant, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';

const PASSWORD = 'correct horse battery staple';
const CARD = '4111111111111111';

describe('a traced delivery saved as an example', () => {
  const sb = makeSandbox();
  let backend: Server;
  let backendCalls = 0;
  let server: ServerProcess;
  let flowText = '';

  before(async () => {
    backend = createServer((req, res) => {
      backendCalls += 1;
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ price: 12.5, card_number: CARD }));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(backend.address() as { port: number }).port}`;
    flowText = flow(
      'acme',
      'quote',
      'effects: [http_egress]\nlog_extra_mask_fields: [paid_with]',
      `## Step: price\neffects: [http_egress]\nendpoint: ${url}/price/{{ ctx.input.id }}\n\n## Step: answer\nresponse_status: 201\n\`\`\`ntd\n{"id": "{{ ctx.correlation_id }}", "price": {{ ctx.input.price }}, "paid_with": "{{ ctx.input.card_number }}"}\n\`\`\``,
    );
    createTenant(sb, 'acme');
    const file = join(sb.home, 'quote.flow.md');
    writeFileSync(file, flowText);
    assert.equal(svc(sb, ['deploy', file, '-v', '1.0.0', '--db', sb.db]).code, 0);
    assert.equal(svc(sb, ['trace', 'enable', '--tenant', 'acme', '--flow', 'quote', '--db', sb.db]).code, 0);
    for (const [user, role] of [
      ['sup', 'support'],
      ['dev', 'developer'],
    ])
      assert.equal(
        svc(sb, ['ui', 'user', 'add', '--username', user, '--role', role, '--db', sb.db], { input: `${PASSWORD}\n` })
          .code,
        0,
      );
    server = await startServer(sb, ['--no-auth']);
  });
  after(async () => {
    await server?.stop();
    await new Promise<void>((r) => backend.close(() => r()));
    sb.cleanup();
  });

  it('is offered on the delivery trace, downloads as a .test.md that runs offline, and fails on its masked value until filled in', async () => {
    const run = await fetch(`${server.url}/flows/acme/quote/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-correlation-id': 'rec-1' },
      body: JSON.stringify({ id: '7' }),
    });
    assert.equal(run.status, 201);
    assert.equal(backendCalls, 1);

    const cookie = await uiLogin(server.url, 'sup', PASSWORD);
    // The trace rows are written off the request path: wait for the page to offer the example.
    let page = '';
    for (let i = 0; i < 50 && !page.includes('Save as an example'); i++) {
      page = await (await fetch(`${server.url}/ui/traces?correlation_id=rec-1`, { headers: { cookie } })).text();
      if (!page.includes('Save as an example')) await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(page, /href="\/ui\/traces\/example\?tenant=acme&amp;flow=quote&amp;correlation_id=rec-1"/);

    const res = await fetch(`${server.url}/ui/traces/example?tenant=acme&flow=quote&correlation_id=rec-1`, {
      headers: { cookie },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/markdown/);
    assert.equal(res.headers.get('content-disposition'), 'attachment; filename="quote.test.md"');
    const text = await res.text();
    assert.match(text, /^## Example: recorded delivery rec-1$/m);
    assert.ok(!text.includes(CARD), 'a masked value never leaves the log');
    assert.match(text, /masked:\n {2}- stubs\.price\.body\.card_number\n {2}- expect\.body\.paid_with\n/);

    const dir = join(sb.home, 'tests');
    mkdirSync(dir);
    writeFileSync(join(dir, 'quote.flow.md'), flowText);
    writeFileSync(join(dir, 'quote.test.md'), text);
    const masked = svc(sb, ['test', dir]);
    assert.equal(masked.code, 1, masked.stdout);
    assert.match(masked.stdout, /masked\.stubs\.price\.body\.card_number: the log masked it when it was recorded/);

    // Filled in: the example passes, answered by its recorded stub, without the backend.
    const filled = text
      .replace(/masked:\n( {2}- .*\n)+/, '')
      .replaceAll('"***"', `"${CARD}"`)
      .replaceAll("'***'", `"${CARD}"`);
    writeFileSync(join(dir, 'quote.test.md'), filled);
    const passing = svc(sb, ['test', dir]);
    assert.equal(passing.code, 0, passing.stdout + passing.stderr + filled);
    assert.match(passing.stdout, /^PASS {2}acme\/quote {2}recorded delivery rec-1/m);
    assert.equal(backendCalls, 1, 'svc test never calls the backend');
  });

  it("is the support role's alone, like the trace rows it is made of", async () => {
    const cookie = await uiLogin(server.url, 'dev', PASSWORD);
    const res = await fetch(`${server.url}/ui/traces/example?tenant=acme&flow=quote&correlation_id=rec-1`, {
      headers: { cookie },
    });
    assert.equal(res.status, 403);
    // Without a session: the way to the login page, never the example.
    const none = await fetch(`${server.url}/ui/traces/example?tenant=acme&flow=quote&correlation_id=rec-1`, {
      redirect: 'manual',
    });
    assert.equal(none.status, 303);
    assert.match(none.headers.get('location') ?? '', /\/ui\/login/);
  });

  it('answers 404 for a delivery that was not traced', async () => {
    const cookie = await uiLogin(server.url, 'sup', PASSWORD);
    const res = await fetch(`${server.url}/ui/traces/example?tenant=acme&flow=quote&correlation_id=never`, {
      headers: { cookie },
    });
    assert.equal(res.status, 404);
  });
});

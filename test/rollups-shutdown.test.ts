/**
 * The rollups across a stop, black-box: what a graceful stop (SIGTERM) counted is flushed before
 * the event log closes, so a restarted server's live numbers still hold every delivery; a kill -9
 * loses at most what was counted since the last flush (every 5 s), never what was flushed before.
 * And `svc serve --no-rollups` counts none: its deliveries are answered and logged as ever.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { logRows } from './helpers/log-reads.js';
import { makeSandbox, startServer, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { UI_PASSWORD } from './helpers/ui-browser.js';
import { uiLogin } from './helpers/ui-login.js';

const ANSWER = '## Step: greet\n```ntd\n{"hi": "{{ ctx.input.name }}"}\n```';
const ADMIN = { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: UI_PASSWORD };

/** A sandbox with one flow and a key for it. */
function setUp(): { sandbox: Sandbox; key: string } {
  const sandbox = makeSandbox();
  createTenant(sandbox, 'acme');
  deployFlow(sandbox, flow('acme', 'greeter', '', ANSWER));
  return { sandbox, key: createKey(sandbox, 'acme') };
}

async function run(server: ServerProcess, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await fetch(`${server.url}/flows/acme/greeter/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `n${i}` }),
    });
    assert.equal(r.status, 200);
  }
}

/** The /run door's deliveries as the flow page's diagram draws them (the live numbers of the last hour). */
async function drawnRunDeliveries(server: ServerProcess): Promise<number> {
  const cookie = await uiLogin(server.url, 'admin', UI_PASSWORD);
  const page = await (await fetch(`${server.url}/ui/registry/acme/greeter`, { headers: { cookie } })).text();
  const m = /data-door="http">[\s\S]*?<text[^>]*class="numbers"[^>]*>(\d+) deliver/.exec(page);
  assert.ok(m !== null, 'the /run door carries its number');
  return Number(m[1]);
}

describe('the rollups across a stop', () => {
  const sandboxes: Sandbox[] = [];
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.stop();
    for (const s of sandboxes) s.cleanup();
  });

  it('a graceful stop flushes what it counted: every delivery is in the restarted server’s numbers', async () => {
    const { sandbox, key } = setUp();
    sandboxes.push(sandbox);
    const first = await startServer(sandbox, [], ADMIN);
    await run(first, key, 4);
    // At once, well inside the 5 s between two flushes: only the stop's own flush can carry them.
    assert.equal(await first.stop(), 0);
    const second = await startServer(sandbox, [], ADMIN);
    servers.push(second);
    assert.equal(await drawnRunDeliveries(second), 4);
  });

  it('svc serve --no-rollups counts nothing, on a graceful stop either, and still logs every delivery', async () => {
    const { sandbox, key } = setUp();
    sandboxes.push(sandbox);
    const first = await startServer(sandbox, ['--no-rollups'], ADMIN);
    await run(first, key, 3);
    assert.equal(await drawnRunDeliveries(first), 0);
    assert.equal(await first.stop(), 0);
    assert.equal(
      logRows(sandbox, { flow: 'greeter', event: 'completed' }).length,
      3,
      'its deliveries are logged as ever',
    );
    // A server with the rollups on draws what it counts itself, and nothing of the three before.
    const second = await startServer(sandbox, [], ADMIN);
    servers.push(second);
    assert.equal(await drawnRunDeliveries(second), 0);
    await run(second, key, 2);
    assert.equal(await second.stop(), 0);
    const third = await startServer(sandbox, [], ADMIN);
    servers.push(third);
    assert.equal(await drawnRunDeliveries(third), 2);
  });

  it('a kill -9 keeps what was flushed before it (it loses at most the last 5 s of counts)', async () => {
    const { sandbox, key } = setUp();
    sandboxes.push(sandbox);
    const first = await startServer(sandbox, [], ADMIN);
    await run(first, key, 3);
    // Past one flush interval: these three are in the store.
    await new Promise((r) => setTimeout(r, 6_000));
    await run(first, key, 2);
    await first.kill9();
    const second = await startServer(sandbox, [], ADMIN);
    servers.push(second);
    const drawn = await drawnRunDeliveries(second);
    assert.ok(
      drawn === 3 || drawn === 5,
      `${drawn} deliveries drawn: the 3 flushed, and the last 2 only if a flush came first`,
    );
  });
});

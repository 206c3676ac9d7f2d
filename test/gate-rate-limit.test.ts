import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployAll } from './helpers/registry-setup.js';
import { sleep } from './helpers/wait.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

describe('per-key rate limits (token bucket)', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  const keys: Record<string, string> = {};

  const run = (key: string, flow = 'echo') =>
    fetch(`${server.url}/flows/acme/${flow}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys[key]}`, 'content-type': 'application/json' },
      body: '{}',
    });
  const burst = async (key: string, n: number) =>
    (await Promise.all(Array.from({ length: n }, () => run(key)))).map((r) => r.status);
  const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

  before(async () => {
    createTenant(sandbox, 'acme');
    keys.two = createKey(sandbox, 'acme', { rateLimit: 2 });
    keys.refill = createKey(sandbox, 'acme', { rateLimit: 2 });
    keys.ten = createKey(sandbox, 'acme', { rateLimit: 10 });
    keys.refusals = createKey(sandbox, 'acme', { rateLimit: 2, flows: 'echo' });
    keys.free = createKey(sandbox, 'acme', { rateLimit: 1 });
    keys.metaRefusal = createKey(sandbox, 'acme', { rateLimit: 1, flows: 'echo' });
    keys.unlimited = createKey(sandbox, 'acme');
    createTenant(sandbox, 'other');
    keys.otherTenant = createKey(sandbox, 'other', { rateLimit: 2 });
    await deployAll(sandbox, ['echo', 'secure']);
    server = await startServer(sandbox);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('starts a key at rps tokens and answers the next request 429 with the rate-limit headers and body', async () => {
    assert.equal((await run('two')).status, 200);
    assert.equal((await run('two')).status, 200);
    const res = await run('two');
    const nowSecs = Date.now() / 1000;
    assert.equal(res.status, 429);
    assert.deepEqual(await res.json(), { ok: false, error: 'rate limit exceeded' });
    assert.equal(res.headers.get('x-ratelimit-limit'), '2');
    assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
    const reset = Number(res.headers.get('x-ratelimit-reset'));
    assert.ok(Number.isInteger(reset), 'X-RateLimit-Reset is whole Unix seconds');
    // Empty to full (2 x rps tokens at rps per second) takes about 2 s.
    assert.ok(reset >= Math.floor(nowSecs) + 1 && reset <= Math.ceil(nowSecs) + 3, `reset ${reset} vs now ${nowSecs}`);
    assert.equal(res.headers.get('retry-after'), '1');
    const rows = await waitForLogRows(sandbox, { event: 'access_denied', http_status: 429 });
    assert.ok(rows.length >= 1 && /exceeded/.test(rows[0]!.reason ?? ''));
  });

  it('refills continuously: about rps tokens per second', async () => {
    assert.equal(count(await burst('refill', 4), 200), 2);
    await sleep(650); // 1.3 tokens at 2/s
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await run('refill')).status);
    assert.equal(statuses[0], 200);
    assert.equal(statuses.at(-1), 429);
  });

  it('caps a resting bucket at 2 x rps tokens', async () => {
    assert.equal((await run('ten')).status, 200); // first use: 10 tokens, 9 left
    await sleep(3000); // +30 tokens: 39 without the cap, so all 28 below would pass; 20 with it
    // The burst refills as it goes (10 a second): what it may add is bounded by its own duration,
    // measured, so a slow machine widens the bound by what it really took, never by a guess.
    const started = performance.now();
    const statuses = await burst('ten', 28);
    const refilled = Math.ceil(((performance.now() - started) / 1000) * 10);
    const passed = count(statuses, 200);
    assert.ok(passed >= 19 && passed <= 20 + refilled, `${passed} of 28 passed; capacity is 20, +${refilled} refilled`);
    assert.ok(passed < 28, 'the cap refused some: an uncapped bucket would have held 39 tokens');
    assert.equal(count(statuses, 429), 28 - passed);
  });

  it('charges a token for a refusal carrying a valid key', async () => {
    assert.equal((await run('refusals', 'secure')).status, 403);
    assert.equal((await run('refusals', 'secure')).status, 403);
    const res = await run('refusals', 'echo');
    assert.equal(res.status, 429);
  });

  it('charges a token for a 401 to a valid key of another tenant', async () => {
    assert.equal((await run('otherTenant')).status, 401);
    assert.equal((await run('otherTenant')).status, 401);
    const own = await fetch(`${server.url}/flows/other/anything/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.otherTenant}`, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(own.status, 429);
  });

  it('charges a token for a refusal on the metadata route', async () => {
    const meta = await fetch(`${server.url}/flows/acme/secure`, {
      headers: { authorization: `Bearer ${keys.metaRefusal}` },
    });
    assert.equal(meta.status, 403);
    assert.equal((await run('metaRefusal')).status, 429);
  });

  it('charges no token for successful metadata and connector requests', async () => {
    for (let i = 0; i < 4; i++) {
      const meta = await fetch(`${server.url}/flows/acme/echo`, { headers: { authorization: `Bearer ${keys.free}` } });
      assert.equal(meta.status, 200);
      const conn = await fetch(`${server.url}/connector/events/acme/echo`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.free}`, 'content-type': 'application/json' },
        body: '{"event_type":"connector_received"}',
      });
      assert.equal(conn.status, 202);
    }
    assert.equal((await run('free')).status, 200); // the one starting token is still there
    assert.equal((await run('free')).status, 429);
  });

  it('never throttles a key without a limit', async () => {
    const statuses = await burst('unlimited', 12);
    assert.equal(count(statuses, 200), 12);
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sign } from './helpers/raw-http.js';
import { createKey, createTenant, deployAll } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

const SECRET = 'sig-test-secret';
const MISMATCH = { ok: false, error: 'signature mismatch' };

describe('the shared-secret signature with keys required (--secret)', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key: string;

  const run = (body: string, headers: Record<string, string>, flow = 'echo') =>
    fetch(`${server.url}/flows/acme/${flow}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  const auth = () => ({ authorization: `Bearer ${key}` });

  before(async () => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    await deployAll(sandbox, ['echo']);
    server = await startServer(sandbox, ['--secret', SECRET]);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('announces the signature check in the boot output', () => {
    assert.match(server.output(), /signature:\s+ENABLED/);
  });

  it('answers 200 for the hex HMAC-SHA256 of the raw body', async () => {
    const body = '{ "a" : 1 }';
    const res = await run(body, { ...auth(), 'x-svc-signature': sign(SECRET, body) });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { a: 1 });
  });

  it('answers 401 signature mismatch when the header is missing', async () => {
    const res = await run('{}', auth());
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), MISMATCH);
  });

  it('answers 401 signature mismatch for a non-hex value', async () => {
    const res = await run('{}', { ...auth(), 'x-svc-signature': 'z'.repeat(64) });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), MISMATCH);
  });

  it('answers 401 signature mismatch for a wrong signature (other body, other secret, truncated)', async () => {
    for (const sig of [sign(SECRET, '{"a":2}'), sign('other-secret', '{}'), sign(SECRET, '{}').slice(0, 40)]) {
      const res = await run('{}', { ...auth(), 'x-svc-signature': sig });
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), MISMATCH);
    }
  });

  it('checks the key first: a bad key with a good signature is 401 unauthorized', async () => {
    const res = await run('{}', {
      authorization: 'Bearer svk_0123456789abcdef0123456789abcdef',
      'x-svc-signature': sign(SECRET, '{}'),
    });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), { ok: false, error: 'unauthorized' });
  });

  it('checks the signature before parsing: malformed JSON with a bad signature is 401, with a good one 400', async () => {
    const body = '{"broken":';
    const bad = await run(body, { ...auth(), 'x-svc-signature': sign(SECRET, 'other') });
    assert.equal(bad.status, 401);
    assert.deepEqual(await bad.json(), MISMATCH);
    const good = await run(body, { ...auth(), 'x-svc-signature': sign(SECRET, body) });
    assert.equal(good.status, 400);
  });

  it('does not ask the metadata and connector routes for a signature', async () => {
    const meta = await fetch(`${server.url}/flows/acme/echo`, { headers: auth() });
    assert.equal(meta.status, 200);
    const conn = await fetch(`${server.url}/connector/events/acme/echo`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: '{"event_type":"connector_oversized"}',
    });
    assert.equal(conn.status, 202);
  });
});

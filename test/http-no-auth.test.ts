import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sign } from './helpers/raw-http.js';
import { createTenant, deployAll } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

const SECRET = 'no-auth-secret';

describe('--no-auth with --secret: the gate is off, the signature still applies', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;

  const run = (body: string, headers: Record<string, string>) =>
    fetch(`${server.url}/flows/acme/echo/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });

  before(async () => {
    createTenant(sandbox, 'acme');
    await deployAll(sandbox, ['echo']);
    server = await startServer(sandbox, ['--no-auth', '--secret', SECRET]);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('says DISABLED in the boot output', () => {
    assert.match(server.output(), /api keys:\s+DISABLED/);
  });

  it('runs a signed request without any key', async () => {
    const res = await run('{"a":1}', { 'x-svc-signature': sign(SECRET, '{"a":1}') });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { a: 1 });
  });

  it('ignores an Authorization header, even a malformed or unknown one', async () => {
    for (const authorization of ['Basic Zm9vOmJhcg==', 'Bearer svk_0123456789abcdef0123456789abcdef']) {
      const res = await run('{}', { authorization, 'x-svc-signature': sign(SECRET, '{}') });
      assert.equal(res.status, 200);
    }
  });

  it('still refuses a missing or wrong signature with 401 signature mismatch', async () => {
    for (const headers of [{}, { 'x-svc-signature': sign('wrong', '{}') }] as Record<string, string>[]) {
      const res = await run('{}', headers);
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), { ok: false, error: 'signature mismatch' });
    }
  });

  it('serves metadata and connector events without a key', async () => {
    assert.equal((await fetch(`${server.url}/flows/acme/echo`)).status, 200);
    const conn = await fetch(`${server.url}/connector/events/acme/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"event_type":"connector_received"}',
    });
    assert.equal(conn.status, 202);
  });

  it('still checks path components: 400 invalid flow identifier', async () => {
    const res = await fetch(`${server.url}/flows/ACME/echo/run`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { ok: false, error: 'invalid flow identifier' });
  });

  it('answers 404 for a flow that does not exist', async () => {
    const res = await fetch(`${server.url}/flows/acme/ghost/run`, {
      method: 'POST',
      body: '{}',
      headers: { 'x-svc-signature': sign(SECRET, '{}') },
    });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { ok: false, error: "flow 'acme/ghost' not found" });
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

describe('svc serve', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  before(async () => {
    server = await startServer(sandbox, ['--no-auth']);
  });
  after(async () => {
    await server.stop();
    sandbox.cleanup();
  });

  it('GET /health answers 200 {"ok":true}', async () => {
    const res = await fetch(`${server.url}/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { ok: true });
  });

  it('boot output lists the state files and the API key status', () => {
    const out = server.output();
    for (const word of ['registry', 'audit', 'log', 'queues', 'signature']) assert.match(out, new RegExp(word));
    assert.match(out, /DISABLED/);
  });

  it('boot output names the management UI and says no account exists yet; /ui asks for a login even under --no-auth', async () => {
    assert.match(
      server.output(),
      /ui:\s+http:\/\/127\.0\.0\.1:\d+\/ui \(no account yet: set SVC_UI_ADMIN_USER and SVC_UI_ADMIN_PASS, or run svc ui user add\)/,
    );
    const res = await fetch(`${server.url}/ui`, { redirect: 'manual' });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ui/login');
  });

  it('serves no /metrics without --metrics, and says so on the boot output', async () => {
    assert.match(server.output(), /metrics: +off \(--metrics or --metrics-port not given\)/);
    const res = await fetch(`${server.url}/metrics`);
    assert.equal(res.status, 404);
  });

  it('stops cleanly on SIGTERM', async () => {
    assert.equal(await server.stop(), 0);
  });
});

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

  it('boot output promises no management UI, which is not built yet, and /ui answers 404', async () => {
    assert.doesNotMatch(server.output(), /\bui\b|\/ui/i);
    const res = await fetch(`${server.url}/ui`);
    assert.equal(res.status, 404);
  });

  it('stops cleanly on SIGTERM', async () => {
    assert.equal(await server.stop(), 0);
  });
});

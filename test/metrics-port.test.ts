/** `svc serve --metrics-port <n>`: `GET /metrics` alone on its own listener, not on the main port. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

describe('svc serve --metrics-port', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let metricsUrl = '';

  before(async () => {
    server = await startServer(sandbox, ['--no-auth', '--metrics-port', '0']);
    const m = /metrics: +(http:\/\/\S+)\/metrics/.exec(server.output());
    assert.ok(m, server.output());
    metricsUrl = m[1]!;
  });
  after(async () => {
    await server.stop();
    sandbox.cleanup();
  });

  it('listens on a port of its own', () => {
    assert.notEqual(metricsUrl, server.url);
  });

  it('answers GET /metrics there, and 404 to anything else there', async () => {
    const res = await fetch(`${metricsUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^# HELP svc_/m);
    assert.equal((await fetch(`${metricsUrl}/health`)).status, 404);
    assert.equal((await fetch(`${metricsUrl}/metrics`, { method: 'POST' })).status, 404);
  });

  it('serves no /metrics on the main port, though it counts its requests', async () => {
    assert.equal((await fetch(`${server.url}/metrics`)).status, 404);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    assert.match(text, /^svc_http_requests_total\{route="\/health",status="200"\} 1$/m);
  });
});

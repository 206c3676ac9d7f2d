import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { logRows, waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployAll, setSystemConfig } from './helpers/registry-setup.js';
import { rawRequest, trickleRequest } from './helpers/raw-http.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

/** How long the loopback backend takes to answer: more than flow_max_duration_secs (1 s). */
const SLOW_MS = 1200;

describe('/run execution limits (flow_max_duration_secs = 1, max_concurrent_flow_executions = 1, request_body_timeout_secs = 1)', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: Server;
  let key: string;
  let arrived: () => void = () => {};

  const run = (flow: string, correlationId: string) =>
    fetch(`${server.url}/flows/acme/${flow}/run`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-correlation-id': correlationId,
      },
      body: '{}',
    });

  before(async () => {
    backend = createServer((req, res) => {
      req.resume();
      arrived();
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}'), SLOW_MS);
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    await deployAll(sandbox, ['echo', 'slow']);
    setSystemConfig(sandbox, {
      flow_max_duration_secs: 1,
      max_concurrent_flow_executions: 1,
      request_body_timeout_secs: 1,
    });
    const port = (backend.address() as AddressInfo).port;
    server = await startServer(sandbox, [], { SLOW_URL: `http://127.0.0.1:${port}` });
  });
  after(async () => {
    await server?.stop();
    backend?.closeAllConnections();
    await new Promise((r) => backend?.close(r));
    sandbox.cleanup();
  });

  it('answers 500 with the step and limit_secs when the flow exceeds its maximum duration', async () => {
    const res = await run('slow', 'too-long-1');
    assert.equal(res.status, 500);
    const body = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['error', 'limit_secs', 'step']);
    assert.equal(body.error, 'flow exceeded its maximum duration');
    assert.equal(body.limit_secs, 1);
    assert.ok(body.step === 'wait' || body.step === 'after', `step ${String(body.step)}`);
    const completed = await waitForLogRows(sandbox, { correlation_id: 'too-long-1', event: 'completed' });
    assert.equal(completed[0]?.http_status, 500);
  });

  it('answers 503 with Retry-After before the flow starts when the execution ceiling is reached', async () => {
    const inFlight = new Promise<void>((r) => (arrived = r));
    const slow = run('slow', 'holder-1');
    await inFlight; // the slow flow now holds the only execution slot
    const busy = await run('echo', 'busy-1');
    assert.equal(busy.status, 503);
    assert.deepEqual(await busy.json(), { ok: false, error: 'server busy: too many flow executions in flight' });
    const retryAfter = busy.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/);
    await (await slow).text();
    // The slot is free again: the same request succeeds at once.
    const again = await run('echo', 'busy-2');
    assert.equal(again.status, 200);
    await waitForLogRows(sandbox, { correlation_id: 'busy-2', event: 'completed' });
    assert.deepEqual(
      logRows(sandbox, { correlation_id: 'busy-1', event: 'received' }),
      [],
      'a busy refusal never started the flow',
    );
  });

  it('a key holder sending its body too slowly gets 408 once request_body_timeout_secs passes, and the connection is closed', async () => {
    for (const route of ['run', 'enqueue']) {
      const started = Date.now();
      const head = `POST /flows/acme/echo/${route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`;
      const res = await rawRequest(server.port, head, { untilClose: true, waitMs: 5000 });
      assert.equal(res.status, 408, `${route}: ${res.raw}`);
      assert.match(res.body, /the request body did not arrive within 1 s/);
      assert.ok(res.closed, 'the connection is closed');
      assert.ok(Date.now() - started < 4000, 'answered about a second after reading began');
    }
  });

  it('a connector event whose body stops arriving gets 400 once request_body_timeout_secs passes, and the connection is closed', async () => {
    const head = `POST /connector/events/acme/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"event_type":`;
    const res = await trickleRequest(server.port, head, '', { everyMs: 1000, waitMs: 5000 });
    assert.equal(res.status, 400, res.raw);
    assert.match(res.head, /^connection: close$/im);
    assert.match(res.body, /the request body did not arrive within 1 s/);
    assert.ok(res.closedAfterMs !== undefined, `the connection is closed: ${res.raw}`);
    assert.ok(res.closedAfterMs - res.answeredAfterMs! < 1000, 'closed right after the answer');
  });

  it('a body trickled a byte every 200 ms is cut off at request_body_timeout_secs on every route that reads one: 408 (a connector event: 400), then the connection closes', async () => {
    const form = '_csrf=x&username=admin&password=a-long-enough-passphrase';
    const cases: { path: string; type: string; body: string; status: number }[] = [
      { path: '/flows/acme/echo/run', type: 'application/json', body: `{"pad":"${'x'.repeat(60)}"}`, status: 408 },
      { path: '/flows/acme/echo/enqueue', type: 'application/json', body: `{"pad":"${'x'.repeat(60)}"}`, status: 408 },
      {
        path: '/connector/events/acme/echo',
        type: 'application/json',
        body: `{"event_type":"connector_received","pad":"${'x'.repeat(40)}"}`,
        status: 400,
      },
      // The UI forms: the login, the logout, and a page's form (the body is read before the session check).
      { path: '/ui/login', type: 'application/x-www-form-urlencoded', body: form, status: 408 },
      { path: '/ui/logout', type: 'application/x-www-form-urlencoded', body: form, status: 408 },
      { path: '/ui/tenants', type: 'application/x-www-form-urlencoded', body: form, status: 408 },
    ];
    const outcomes = await Promise.allSettled(
      cases.map(async (c) => {
        const head = `POST ${c.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${c.type}\r\nContent-Length: ${c.body.length}\r\n\r\n`;
        const res = await trickleRequest(server.port, head, c.body, { everyMs: 200, waitMs: 6000 });
        assert.equal(res.status, c.status, `${c.path}: ${res.raw}`);
        assert.match(res.body, /the request body did not arrive within 1 s/, c.path);
        assert.ok(res.answeredAfterMs! < 3000, `${c.path}: answered ${res.answeredAfterMs} ms in, about 1 s`);
        assert.match(res.head, /^connection: close$/im, c.path);
        assert.ok(res.closedAfterMs !== undefined, `${c.path}: the connection is closed`);
        assert.ok(res.closedAfterMs - res.answeredAfterMs! < 1000, `${c.path}: closed right after the answer`);
      }),
    );
    // Every route's outcome, not only the first failure.
    const failures = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
    assert.deepEqual(failures, []);
  });

  it('a body no route reads that is still arriving, chunked or above 16 KiB, closes the connection after the answer; a small one that arrived keeps it', async () => {
    const cases: { name: string; request: string; status: number; closed: boolean }[] = [
      {
        name: 'an unknown route, a chunked body never finished',
        request: 'POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n',
        status: 404,
        closed: true,
      },
      {
        name: 'an unknown route, 100 KiB announced, 10 bytes sent',
        request: 'POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0123456789',
        status: 404,
        closed: true,
      },
      {
        name: 'GET /health with 100 KiB announced',
        request: 'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0123456789',
        status: 200,
        closed: true,
      },
      {
        name: 'a UI form of another content type, 100 KiB announced',
        request: 'POST /ui/login HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n0123',
        status: 403,
        closed: true,
      },
      {
        name: 'an unknown route, a small body all sent',
        request: 'POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789',
        status: 404,
        closed: false,
      },
    ];
    for (const c of cases) {
      const res = await rawRequest(server.port, c.request, { untilClose: true, waitMs: 1500 });
      assert.equal(res.status, c.status, `${c.name}: ${res.raw.slice(0, 200)}`);
      assert.equal(res.closed, c.closed, `${c.name}: closed`);
      assert.equal(/^connection: close$/im.test(res.head), c.closed, `${c.name}: Connection: close`);
    }
  });

  describe('malformed requests answer in the service body shape', () => {
    const CASES: { name: string; request: string; status: number; error: RegExp; closed: boolean }[] = [
      {
        name: 'a header line Node cannot parse',
        request: 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
        status: 400,
        error: /^bad request$/,
        closed: true,
      },
      {
        name: 'a request head over 16 KiB',
        request: `GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
        status: 431,
        error: /^request header fields too large$/,
        closed: true,
      },
      {
        name: 'a percent-escape that does not decode',
        request: 'GET /flows/acme/%zz HTTP/1.1\r\nHost: x\r\n\r\n',
        status: 400,
        error: /not a valid url component/,
        closed: false,
      },
      {
        name: 'an unreadable Content-Type on a route that does not exist',
        request: 'POST //flows/acme/echo/run HTTP/1.1\r\nHost: x\r\nContent-Type: a b\r\nContent-Length: 2\r\n\r\n{}',
        status: 404,
        error: /^no route for POST \/\/flows\/acme\/echo\/run$/,
        closed: false,
      },
    ];
    for (const c of CASES) {
      it(`${c.name}: ${c.status} {"ok":false,"error":...}`, async () => {
        const res = await rawRequest(server.port, c.request, { untilClose: c.closed, waitMs: 3000 });
        assert.equal(res.status, c.status, res.raw);
        assert.match(res.head, /content-type: application\/json/i);
        const body = JSON.parse(res.body) as { ok: boolean; error: string };
        assert.equal(body.ok, false);
        assert.match(body.error, c.error);
        if (c.closed) assert.ok(res.closed, 'the connection is closed');
      });
    }
  });
});

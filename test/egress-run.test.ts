/** http_egress through the real `svc serve` against loopback backend stubs started by the test. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { requestWithHeaders } from './helpers/raw-http.js';
import { logRows, type LogRow } from './helpers/log-reads.js';
import { createTenant, deployFlow, enableTrace, flow } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type ServerProcess } from './helpers/svc.js';

const SECRET = 'tok-4f1d9b7e-never-logged';
const NS11 = 'http://schemas.xmlsoap.org/soap/envelope/';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const egressStep = (path: string, extra = '') =>
  `## Step: call\neffects: [http_egress]\nendpoint: \${BACKEND_URL}${path}${extra ? `\n${extra}` : ''}`;

const FLOWS = [
  flow(
    'acme',
    'json',
    'effects: [http_egress]\nresponse_headers: [x-backend-id]',
    egressStep('/json', 'method: GET\nresponse_status: "{{ ctx.response.status }}"'),
  ),
  flow('acme', 'xml', 'effects: [http_egress]', egressStep('/xml', 'method: GET')),
  flow('acme', 'text', 'effects: [http_egress]', egressStep('/text', 'method: GET')),
  flow(
    'acme',
    'post',
    'effects: [http_egress]',
    `## Step: shape\n\`\`\`ntd\n{"id": "{{ ctx.input.id }}", "n": {{ ctx.input.n }}}\n\`\`\`\n\n${egressStep('/echo/{{ ctx.input.id }}', 'headers:\n  x-request-id: "{{ ctx.correlation_id }}"')}`,
  ),
  flow(
    'acme',
    'unset',
    'effects: [http_egress]',
    '## Step: call\neffects: [http_egress]\nendpoint: ${SVC_TEST_NEVER_SET_URL}/x',
  ),
  flow('acme', 'failing', 'effects: [http_egress]', egressStep('/fail')),
  flow('acme', 'big', 'effects: [http_egress]', egressStep('/json', 'method: GET\nmax_response_bytes: 16')),
  flow('acme', 'slow', 'effects: [http_egress]', egressStep('/slow', 'read_timeout_ms: 300')),
  flow(
    'acme',
    'soapout',
    'effects: [http_egress]',
    `## Step: call\neffects: [http_egress]\nendpoint: \${BACKEND_URL}/soap\nsoap_version: "1.1"\nsoap_action: urn:quotes#GetQuote\n\`\`\`ntd\n<GetQuote xmlns="urn:quotes"><symbol>{{ ctx.input.symbol }}</symbol></GetQuote>\n\`\`\`\n\n## Step: answer\n\`\`\`ntd\n{"root": "{{ ctx.input.root }}", "xml": "{{ ctx.input.xml }}"}\n\`\`\``,
  ),
  flow(
    'acme',
    'soapout12',
    'effects: [http_egress]',
    '## Step: call\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/soap12\nsoap_version: "1.2"\nsoap_operation: GetQuote\n```ntd\n<GetQuote xmlns="urn:quotes"/>\n```',
  ),
  flow(
    'acme',
    'soapfault',
    'effects: [http_egress]',
    `## Step: call\neffects: [http_egress]\nendpoint: \${BACKEND_URL}/soapfault\nsoap_version: "1.1"\nsoap_operation: GetQuote\n\`\`\`ntd\n<GetQuote xmlns="urn:quotes"/>\n\`\`\`\n\n## Fault: explain\n\`\`\`ntd\n{"code": "{{ ctx.soap_fault_code }}", "string": "{{ ctx.soap_fault_string }}", "step": "{{ ctx.input.fault_step }}", "kind": "{{ ctx.input.fault_kind }}", "backend": "{{ ctx.input.fault_backend_status }}", "in_code": "{{ ctx.input.fault_soap_code }}", "in_string": "{{ ctx.input.fault_soap_string }}"}\n\`\`\``,
  ),
  flow(
    'acme',
    'secret',
    'effects: [secret_read, http_egress]\nlog_level: full',
    `## Step: api_token\neffects: [secret_read]\n\n${egressStep('/auth', 'bearer_token: "{{ ctx.api_token }}"')}\n\n## Step: answer\n\`\`\`ntd\n{"seen": {{ ctx.input.authorized }}}\n\`\`\``,
  ),
];

describe('http_egress through svc serve', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let backend: Server;
  const seen: Seen[] = [];

  const run = (name: string, body: unknown = {}, headers: Record<string, string> = {}) =>
    requestWithHeaders(`${server.url}/flows/acme/${name}/run`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...headers },
    });

  before(async () => {
    backend = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const url = req.url ?? '';
        if (url === '/json')
          return void res
            .writeHead(201, { 'content-type': 'application/json', 'x-backend-id': 'b-7', 'x-other': 'no' })
            .end('{"price": 12.5, "items": [1, 2]}');
        if (url === '/xml')
          return void res.writeHead(200, { 'content-type': 'application/xml' }).end('<quote><price>3</price></quote>');
        if (url === '/text') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
        if (url.startsWith('/echo/'))
          return void res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ got: JSON.parse(body) as unknown, ct: req.headers['content-type'] }));
        if (url === '/fail') return void res.writeHead(500, { 'content-type': 'text/plain' }).end('backend broke');
        if (url === '/slow') return void setTimeout(() => res.writeHead(200).end('late'), 3000).unref();
        if (url === '/soap' || url === '/soap12') {
          const ns = url === '/soap' ? NS11 : 'http://www.w3.org/2003/05/soap-envelope';
          return void res
            .writeHead(200, {
              'content-type': url === '/soap' ? 'text/xml; charset=utf-8' : 'application/soap+xml; charset=utf-8',
            })
            .end(
              `<e:Envelope xmlns:e="${ns}"><e:Body><q:QuoteResponse xmlns:q="urn:quotes"><q:price>3</q:price></q:QuoteResponse></e:Body></e:Envelope>`,
            );
        }
        if (url === '/soapfault') {
          return void res
            .writeHead(500, { 'content-type': 'text/xml; charset=utf-8' })
            .end(
              `<e:Envelope xmlns:e="${NS11}"><e:Body><e:Fault><faultcode>q:NoStock</faultcode><faultstring>out of stock</faultstring></e:Fault></e:Body></e:Envelope>`,
            );
        }
        if (url === '/auth') {
          const ok = req.headers.authorization === `Bearer ${SECRET}`;
          return void res
            .writeHead(200, {
              'content-type': 'application/json',
              'set-cookie': 'session=abc',
              'x-backend-id': 'auth-1',
            })
            .end(JSON.stringify({ authorized: ok }));
        }
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;

    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'beta');
    for (const f of FLOWS) deployFlow(sandbox, f);
    deployFlow(
      sandbox,
      flow('beta', 'ws', 'soap_operation: Op\nsoap_namespace: urn:b', '## Step: a\n```ntd\n<ok/>\n```'),
    );
    assert.equal(svc(sandbox, ['tenant', 'disable', '--id', 'beta', '--db', sandbox.db]).code, 0);
    enableTrace(sandbox, 'acme', 'secret');
    enableTrace(sandbox, 'acme', 'json');
    for (const f of ['failing', 'big', 'xml', 'soapout', 'soapfault']) enableTrace(sandbox, 'acme', f);
    server = await startServer(sandbox, ['--no-auth'], {
      BACKEND_URL: backendUrl,
      SVC_SECRET_API_TOKEN: SECRET,
      SVC_TEST_NEVER_SET_URL: undefined,
      RUST_LOG: 'info',
    });
  });

  after(async () => {
    await server?.stop();
    backend?.closeAllConnections();
    await new Promise<void>((r) => backend.close(() => r()));
    sandbox.cleanup();
  });

  it('a JSON response becomes the output; response_status takes the backend status and response_headers passes a named header back', async () => {
    const r = await run('json');
    assert.equal(r.status, 201, r.body);
    assert.deepEqual(JSON.parse(r.body), { price: 12.5, items: [1, 2] });
    assert.equal(r.headers['x-backend-id'], 'b-7');
    assert.equal(r.headers['x-other'], undefined, 'only the headers named in response_headers pass');
    assert.equal(seen.at(-1)!.method, 'GET');
  });

  it('an XML response becomes an XML value, answered as application/xml', async () => {
    const r = await requestWithHeaders(`${server.url}/flows/acme/xml/run`, {
      method: 'POST',
      body: '<ask><id>1</id></ask>',
      headers: { 'content-type': 'application/xml' },
    });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers['content-type'], 'application/xml; charset=utf-8');
    assert.match(r.body, /<quote><price>3<\/price><\/quote>/);
  });

  it('a text response becomes a string, answered as text/plain', async () => {
    const r = await run('text');
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.body, 'plain words');
  });

  it('the message is sent as JSON by POST, with rendered endpoint and header templates', async () => {
    const r = await run('post', { id: 'a1', n: 4 }, { 'x-correlation-id': 'corr-123' });
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(JSON.parse(r.body), { got: { id: 'a1', n: 4 }, ct: 'application/json' });
    const call = seen.at(-1)!;
    assert.equal(call.method, 'POST');
    assert.equal(call.url, '/echo/a1');
    assert.equal(call.headers['x-request-id'], 'corr-123');
  });

  it('an unset ${VAR} in the endpoint fails with 500 flow execution failed and the log names the variable', async () => {
    const r = await run('unset');
    assert.equal(r.status, 500);
    assert.deepEqual(JSON.parse(r.body), { ok: false, error: 'flow execution failed' });
    assert.doesNotMatch(r.body, /SVC_TEST_NEVER_SET_URL/, 'the variable name is for the operator, not the caller');
  });

  it('a non-2xx backend response fails the step with 502', async () => {
    const r = await run('failing');
    assert.equal(r.status, 502);
    assert.deepEqual(JSON.parse(r.body), { ok: false, error: 'flow execution failed' });
  });

  it('a response over max_response_bytes is abandoned: 413', async () => {
    const r = await run('big');
    assert.equal(r.status, 413, r.body);
  });

  it('a read timeout fails the step with 502 well before the backend answers', async () => {
    const t0 = Date.now();
    const r = await run('slow');
    assert.equal(r.status, 502);
    assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms`);
  });

  it('a SOAP 1.1 call wraps the message, sends SOAPAction, and the next step sees the Body content', async () => {
    const r = await run('soapout', { symbol: 'ACME' });
    assert.equal(r.status, 200, r.body);
    const out = JSON.parse(r.body) as { root: string; xml: string };
    assert.equal(out.root, 'QuoteResponse');
    assert.match(out.xml, /^<q:QuoteResponse [^>]*xmlns:q="urn:quotes"[^>]*><q:price>3<\/q:price><\/q:QuoteResponse>$/);
    const call = seen.at(-1)!;
    assert.equal(call.headers['content-type']?.split(';')[0], 'text/xml');
    assert.equal(call.headers.soapaction, '"urn:quotes#GetQuote"');
    assert.match(
      call.body,
      new RegExp(
        `<\\w+:Envelope xmlns:\\w+="${NS11}"><\\w+:Body><GetQuote xmlns="urn:quotes"><symbol>ACME</symbol></GetQuote></\\w+:Body></\\w+:Envelope>`,
      ),
    );
  });

  it('a SOAP 1.2 call uses application/soap+xml with the action parameter (soap_operation as fallback)', async () => {
    const r = await run('soapout12');
    assert.equal(r.status, 200, r.body);
    assert.match(r.body, /<q:QuoteResponse/);
    const ct = seen.at(-1)!.headers['content-type'] ?? '';
    assert.match(ct, /^application\/soap\+xml;.*action="GetQuote"/);
  });

  it('a SOAP Fault response fails the step and fills ctx.soap_fault_code / soap_fault_string', async () => {
    const r = await run('soapfault');
    assert.equal(r.status, 502, r.body);
    const body = JSON.parse(r.body) as Record<string, unknown>;
    assert.deepEqual(
      { code: body.code, string: body.string, step: body.step },
      { code: 'q:NoStock', string: 'out of stock', step: 'call' },
    );
    // The handler's own input keeps the SOAP fault too, with the call out's kind and status (issue 36).
    assert.deepEqual(
      { kind: body.kind, in_code: body.in_code, in_string: body.in_string },
      { kind: 'call_out', in_code: 'q:NoStock', in_string: 'out of stock' },
    );
    assert.equal(typeof body.backend, 'number');
  });

  it('bearer_token sends the secret read by secret_read as Authorization: Bearer', async () => {
    const r = await run('secret');
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(JSON.parse(r.body), { seen: true });
    assert.equal(seen.at(-1)!.headers.authorization, `Bearer ${SECRET}`);
  });

  it('application/xml bodies with a DOCTYPE (billion laughs, XXE) get a clear 400', async () => {
    const laughs =
      '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>';
    const xxe = '<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>';
    for (const body of [laughs, xxe]) {
      const r = await requestWithHeaders(`${server.url}/flows/acme/text/run`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/xml' },
      });
      assert.equal(r.status, 400);
      assert.deepEqual(JSON.parse(r.body), {
        ok: false,
        error: 'XML DOCTYPE declarations are not accepted (no DTDs, no entity definitions)',
      });
      assert.doesNotMatch(r.body, /root:/);
    }
    const undefinedEntity = await requestWithHeaders(`${server.url}/flows/acme/text/run`, {
      method: 'POST',
      body: '<a>&xxe;</a>',
      headers: { 'content-type': 'application/xml' },
    });
    assert.equal(undefinedEntity.status, 400);
    assert.match(undefinedEntity.body, /undefined entity reference/);
  });

  it('WSDL of a disabled tenant is 404 under --no-auth too', async () => {
    const r = await requestWithHeaders(`${server.url}/flows/beta/ws/wsdl`);
    assert.equal(r.status, 404);
    assert.deepEqual(JSON.parse(r.body), { ok: false, error: "flow 'beta/ws' not found" });
  });

  describe('after the server stopped (logs flushed)', () => {
    let rows: LogRow[] = [];
    before(async () => {
      await server.stop();
      rows = logRows(sandbox, { tenant: 'acme' });
    });

    it('the completed row of the unset-variable failure names the variable for the operator', () => {
      const done = rows.find((r) => r.flow === 'unset' && r.event === 'completed');
      assert.ok(done, 'no completed row');
      assert.equal(done.http_status, 500);
      assert.match(done.reason ?? '', /SVC_TEST_NEVER_SET_URL is not set/);
    });

    it('egress_traced rows carry http_status and {headers, body} without credential headers', () => {
      const traced = rows.filter((r) => r.event === 'egress_traced' && r.flow === 'secret');
      assert.equal(traced.length, 1, JSON.stringify(rows.filter((r) => r.flow === 'secret')));
      assert.equal(traced[0]!.step, 'call');
      assert.equal(traced[0]!.http_status, 200);
      const payload = JSON.parse(traced[0]!.payload!) as { headers: Record<string, string>; body: unknown };
      assert.deepEqual(payload.body, { authorized: true });
      assert.equal(payload.headers['x-backend-id'], 'auth-1');
      assert.equal(payload.headers['set-cookie'], undefined);
      const json = rows.filter((r) => r.event === 'egress_traced' && r.flow === 'json');
      assert.equal(json[0]!.http_status, 201);
    });

    it('egress_traced is written for a failed call too, and its body is null for an abandoned oversized response', () => {
      const failed = rows.find((r) => r.event === 'egress_traced' && r.flow === 'failing');
      assert.ok(failed, 'no egress_traced row for the failed call');
      assert.equal(failed.http_status, 500);
      assert.equal((JSON.parse(failed.payload!) as { body: unknown }).body, 'backend broke');
      const big = rows.find((r) => r.event === 'egress_traced' && r.flow === 'big');
      assert.ok(big, 'no egress_traced row for the oversized response');
      assert.equal((JSON.parse(big.payload!) as { body: unknown }).body, null);
    });

    it('a SOAP call traces the envelope the backend answered, flattened to JSON so the mask applies (a Fault too)', () => {
      const ok = rows.find((r) => r.event === 'egress_traced' && r.flow === 'soapout');
      assert.ok(ok, 'no egress_traced row for the SOAP call');
      const body = (JSON.parse(ok.payload!) as { body: unknown }).body;
      assert.equal(typeof body, 'object');
      assert.match(JSON.stringify(body), /QuoteResponse.*price.*3/);
      const fault = rows.find((r) => r.event === 'egress_traced' && r.flow === 'soapfault');
      assert.ok(fault, 'no egress_traced row for the SOAP Fault');
      assert.equal(fault.http_status, 500);
      assert.match(JSON.stringify((JSON.parse(fault.payload!) as { body: unknown }).body), /Fault.*out of stock/);
    });

    it('an XML ctx.input is traced as an _unrepresentable marker naming the root element', () => {
      const entry = rows.find((r) => r.event === 'step_traced' && r.flow === 'xml' && r.step === 'received');
      assert.ok(entry, JSON.stringify(rows.filter((r) => r.flow === 'xml')));
      assert.deepEqual(JSON.parse(entry.payload!), { _unrepresentable: 'ask' });
    });

    it('step_traced rows start with the entry row received; a plain http_egress step has none', () => {
      const steps = rows.filter((r) => r.event === 'step_traced' && r.flow === 'secret').map((r) => r.step);
      assert.deepEqual(steps, ['received', 'api_token', 'answer']);
      assert.equal(
        rows.filter((r) => r.flow === 'text' && /_traced$/.test(r.event)).length,
        0,
        'no trace rows for a flow without tracing',
      );
    });

    it("the secret_read value appears neither in the event log (log.db, or the store's events) nor in logs/*.jsonl nor on stderr", () => {
      if (ON_PG_STORE) {
        // Every row of the store's event log, whatever its tenant or column.
        assert.equal(
          JSON.stringify(storeRows(sandbox, 'log', 'SELECT * FROM events')).includes(SECRET),
          false,
          'events',
        );
      } else {
        // The file's bytes: free pages and every table included.
        assert.equal(readFileSync(join(sandbox.home, 'state', 'log.db')).includes(SECRET), false, 'log.db');
      }
      const dir = join(sandbox.home, 'state', 'logs');
      const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
      assert.ok(files.length > 0);
      for (const f of files) assert.equal(readFileSync(join(dir, f), 'utf8').includes(SECRET), false, f);
      assert.equal(server.stderr().includes(SECRET), false, 'stderr');
      assert.ok(rows.some((r) => r.flow === 'secret' && r.event === 'completed'));
    });
  });
});

/** SOAP on /run and the WSDL route through the real `svc serve`: detection, answers, faults, a real SOAP client. */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as soap from 'soap';
import { requestWithHeaders } from './helpers/raw-http.js';
import { createKey, createTenant, deployFlow, flow, setSystemConfig } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

const NS11 = 'http://schemas.xmlsoap.org/soap/envelope/';
const NS12 = 'http://www.w3.org/2003/05/soap-envelope';
const env11 = (body: string) =>
  `<?xml version="1.0"?><s:Envelope xmlns:s="${NS11}"><s:Body>${body}</s:Body></s:Envelope>`;
const env12 = (body: string) => `<env:Envelope xmlns:env="${NS12}"><env:Body>${body}</env:Body></env:Envelope>`;
const SOAP_KEYS = (op: string) => `soap_operation: ${op}\nsoap_namespace: urn:test:${op.toLowerCase()}`;

const ECHO = flow(
  'acme',
  'echo',
  SOAP_KEYS('Echo'),
  `## Step: answer
response_header_x_extra: "yes"
\`\`\`ntd
<EchoResponse xmlns="urn:test:echo"><action>{{ has(ctx.soap_action) ? ctx.soap_action : 'none' }}</action><version>{{ ctx.soap_version }}</version><root>{{ ctx.input.root }}</root><got>{{ ctx.input }}</got></EchoResponse>
\`\`\``,
);
const JSON_OUT = flow(
  'acme',
  'jsonout',
  SOAP_KEYS('Json'),
  '## Step: answer\n```ntd\n{"total": 3, "note": "a<b"}\n```',
);
const RULES = flow(
  'acme',
  'rules',
  SOAP_KEYS('Check'),
  `## Step: prep
response_header_x_leak: "leaked"
set_ctx:
  soap_fault_code: "{{ 'x-fault-code' in ctx.headers ? ctx.headers['x-fault-code'] : '' }}"
  soap_fault_string: "{{ 'x-fault-string' in ctx.headers ? ctx.headers['x-fault-string'] : '' }}"

## Step: check
\`\`\`validate
ctx.headers['x-mode'] != 'syn' | syntax broken | syntactic
ctx.headers['x-mode'] != 'sem' | meaning broken | semantic
ctx.headers['x-mode'] != 'defect' || int('x') == 1 | never | semantic
\`\`\``,
);
const CALLOUT = flow(
  'acme',
  'callout',
  `effects: [http_egress]\n${SOAP_KEYS('Call')}`,
  `## Step: prep
response_header_x_leak: "leaked"
\`\`\`ntd
{"a": 1}
\`\`\`

## Step: call
effects: [http_egress]
endpoint: http://127.0.0.1:9/nothing
connect_timeout_ms: 500`,
);
const HANDLED = flow(
  'acme',
  'handled',
  `effects: [http_egress]\n${SOAP_KEYS('Call')}`,
  `## Step: call
effects: [http_egress]
endpoint: http://127.0.0.1:9/nothing
connect_timeout_ms: 500

## Fault: recover
response_status: "{{ 'x-status' in ctx.headers ? ctx.headers['x-status'] : '502' }}"
response_header_x_leak: "leaked"
set_ctx:
  soap_fault_string: "recovered from {{ ctx.input.fault_step }}"
\`\`\`ntd
<Sorry xmlns="urn:test:call">{{ ctx.input.fault_step }}</Sorry>
\`\`\``,
);
const SCOPED = flow(
  'acme',
  'scoped',
  `required_scope: admin\n${SOAP_KEYS('Echo')}`,
  '## Step: answer\n```ntd\n<ok/>\n```',
);
const NO_SOAP = flow('acme', 'nosoap', '', '## Step: answer\n```ntd\n<ok/>\n```');
const SLOW = flow(
  'acme',
  'slow',
  `effects: [http_egress]\n${SOAP_KEYS('Slow')}`,
  '## Step: call\neffects: [http_egress]\nendpoint: ${BACKEND_URL}/slow\nmethod: GET',
);
const BETA = flow('beta', 'echo', SOAP_KEYS('Echo'), '## Step: answer\n```ntd\n<ok/>\n```');

describe('SOAP on /run and GET .../wsdl through svc serve', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';
  let readerKey = '';
  let backend: Server;
  let slowArrived: () => void = () => undefined;
  let releaseSlow: () => void = () => undefined;
  const post = (path: string, body: string, headers: Record<string, string>, auth = true) =>
    requestWithHeaders(`${server.url}${path}`, {
      method: 'POST',
      body,
      headers: { ...(auth ? { authorization: `Bearer ${key}` } : {}), ...headers },
    });

  before(async () => {
    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'beta');
    for (const f of [ECHO, JSON_OUT, RULES, CALLOUT, HANDLED, SCOPED, NO_SOAP, SLOW, BETA]) deployFlow(sandbox, f);
    assert.equal(svc(sandbox, ['tenant', 'disable', '--id', 'beta', '--db', sandbox.db]).code, 0);
    key = createKey(sandbox, 'acme');
    readerKey = createKey(sandbox, 'acme', { scopes: 'read' });
    // One execution in flight at a time: a held slow call makes the next /run a 503 (server busy).
    setSystemConfig(sandbox, { max_concurrent_flow_executions: 1 });
    backend = createServer((_req, res) => {
      releaseSlow = () => res.writeHead(200, { 'content-type': 'application/xml' }).end('<late/>');
      slowArrived();
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    server = await startServer(sandbox, [], {
      BACKEND_URL: `http://127.0.0.1:${(backend.address() as AddressInfo).port}`,
    });
  });
  after(async () => {
    await server?.stop();
    backend?.closeAllConnections();
    await new Promise<void>((r) => (backend ? backend.close(() => r()) : r()));
    sandbox.cleanup();
  });

  describe('detection and successful answers', () => {
    it('a text/xml request with SOAPAction is SOAP 1.1: the Body content is the input and the answer is a 1.1 envelope', async () => {
      const r = await post('/flows/acme/echo/run', env11('<e:Echo xmlns:e="urn:test:echo"><v>1</v></e:Echo>'), {
        'content-type': 'text/xml; charset=utf-8',
        soapaction: '"urn:test#Echo"',
      });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers['content-type'], 'text/xml; charset=utf-8');
      assert.match(r.body, new RegExp(`^<\\?xml[^>]*\\?><soap:Envelope xmlns:soap="${NS11}"><soap:Body><EchoResponse`));
      assert.match(r.body, /<action>urn:test#Echo<\/action><version>1\.1<\/version><root>Echo<\/root>/);
      assert.match(r.body, /<got><e:Echo [^>]*xmlns:e="urn:test:echo"[^>]*><v>1<\/v><\/e:Echo><\/got>/);
      assert.equal(r.headers['x-extra'], 'yes', 'response_header_<name> reaches a successful SOAP answer');
      assert.equal(r.headers['x-svc-soap-warning'], undefined);
    });

    it('a text/xml request without SOAPAction is detected by the Envelope in its first bytes', async () => {
      const r = await post('/flows/acme/echo/run', env11('<Echo/>'), { 'content-type': 'text/xml' });
      assert.equal(r.status, 200, r.body);
      assert.match(r.body, /<action>none<\/action><version>1\.1<\/version><root>Echo<\/root>/);
      assert.match(r.body, new RegExp(`xmlns:soap="${NS11}"`));
    });

    it('application/soap+xml is SOAP 1.2: action from the content type, answered as application/soap+xml', async () => {
      const r = await post('/flows/acme/echo/run', env12('<Echo/>'), {
        'content-type': 'application/soap+xml; charset=utf-8; action="urn:test#Echo12"',
      });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers['content-type'], 'application/soap+xml; charset=utf-8');
      assert.match(r.body, new RegExp(`<soap:Envelope xmlns:soap="${NS12}">`));
      assert.match(r.body, /<action>urn:test#Echo12<\/action><version>1\.2<\/version>/);
    });

    it('the 1.2 envelope namespace under text/xml selects 1.2', async () => {
      const r = await post('/flows/acme/echo/run', env12('<Echo/>'), { 'content-type': 'text/xml' });
      assert.equal(r.status, 200, r.body);
      assert.match(r.body, /<version>1\.2<\/version>/);
      assert.equal(r.headers['content-type'], 'application/soap+xml; charset=utf-8');
    });

    it('a text/xml request that is not SOAP is a plain XML value and answers plain XML', async () => {
      const r = await post('/flows/acme/jsonout/run', '<order><id>1</id></order>', { 'content-type': 'text/xml' });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(r.body), { total: 3, note: 'a<b' });
    });

    it('a non-XML output is escaped text in RawContent with X-Svc-Soap-Warning: non-xml-output', async () => {
      for (const [envelope, ct] of [
        [env11('<Json/>'), 'text/xml'],
        [env12('<Json/>'), 'application/soap+xml'],
      ] as const) {
        const r = await post('/flows/acme/jsonout/run', envelope, { 'content-type': ct, soapaction: 'Json' });
        assert.equal(r.status, 200, r.body);
        assert.equal(r.headers['x-svc-soap-warning'], 'non-xml-output');
        assert.match(
          r.body,
          /<soap:Body><RawContent xmlns="urn:svc:soap:raw-content">\{&quot;total&quot;:3,&quot;note&quot;:&quot;a&lt;b&quot;\}<\/RawContent><\/soap:Body>/,
        );
      }
    });
  });

  describe('faults', () => {
    const call = (flowName: string, version: '1.1' | '1.2', headers: Record<string, string> = {}) =>
      version === '1.1'
        ? post(`/flows/acme/${flowName}/run`, env11('<Check/>'), {
            'content-type': 'text/xml',
            soapaction: 'Check',
            ...headers,
          })
        : post(`/flows/acme/${flowName}/run`, env12('<Check/>'), {
            'content-type': 'application/soap+xml',
            ...headers,
          });

    const table: [string, string, Record<string, string>, number, number, RegExp][] = [
      ['a syntactic rule', 'rules', { 'x-mode': 'syn' }, 500, 400, /syntax broken/],
      ['a semantic rule', 'rules', { 'x-mode': 'sem' }, 500, 422, /meaning broken/],
      ['a failed effect', 'callout', {}, 500, 502, /flow execution failed/],
      ['a defect', 'rules', { 'x-mode': 'defect' }, 500, 500, /flow execution failed/],
    ];
    for (const [what, flowName, headers, s11, s12, reason] of table) {
      it(`${what} is a Fault with ${s11} on 1.1 and ${s12} on 1.2, without the flow's response headers`, async () => {
        const a = await call(flowName, '1.1', headers);
        assert.equal(a.status, s11, a.body);
        assert.equal(a.headers['content-type'], 'text/xml; charset=utf-8');
        assert.match(
          a.body,
          /<soap:Fault><faultcode>soap:(Client|Server)<\/faultcode><faultstring>[^<]*<\/faultstring>/,
        );
        assert.match(a.body, reason);
        assert.equal(a.headers['x-leak'], undefined);
        const b = await call(flowName, '1.2', headers);
        assert.equal(b.status, s12, b.body);
        assert.equal(b.headers['content-type'], 'application/soap+xml; charset=utf-8');
        assert.match(b.body, /<soap:Fault><soap:Code><soap:Value>soap:(Sender|Receiver)<\/soap:Value>/);
        assert.match(b.body, reason);
        assert.equal(b.headers['x-leak'], undefined);
      });
    }

    it('server busy (too many executions in flight) is 503 on 1.2 and 500 on 1.1, with Retry-After', async () => {
      const arrived = new Promise<void>((r) => (slowArrived = r));
      const held = post('/flows/acme/slow/run', env11('<Slow/>'), { 'content-type': 'text/xml', soapaction: 'Slow' });
      await arrived;
      try {
        const b = await call('rules', '1.2', { 'x-mode': 'ok' });
        assert.equal(b.status, 503, b.body);
        assert.match(
          b.body,
          /<soap:Value>soap:Receiver<\/soap:Value>.*server busy: too many flow executions in flight/,
        );
        assert.ok(Number(b.headers['retry-after']) >= 1, 'Retry-After');
        const a = await call('rules', '1.1', { 'x-mode': 'ok' });
        assert.equal(a.status, 500, a.body);
        assert.match(a.body, /<faultcode>soap:Server<\/faultcode><faultstring>server busy/);
      } finally {
        releaseSlow();
      }
      const done = await held;
      assert.equal(done.status, 200, done.body);
      assert.match(done.body, /<soap:Body><late\/><\/soap:Body>/);
    });

    it('client-side failures default to Client/Sender, server-side to Server/Receiver', async () => {
      assert.match((await call('rules', '1.1', { 'x-mode': 'syn' })).body, /<faultcode>soap:Client<\/faultcode>/);
      assert.match((await call('rules', '1.2', { 'x-mode': 'sem' })).body, /<soap:Value>soap:Sender<\/soap:Value>/);
      assert.match((await call('callout', '1.1')).body, /<faultcode>soap:Server<\/faultcode>/);
      assert.match((await call('callout', '1.2')).body, /<soap:Value>soap:Receiver<\/soap:Value>/);
    });

    it('set_ctx soap_fault_code and soap_fault_string choose the fault code and string', async () => {
      const h = { 'x-mode': 'sem', 'x-fault-code': 'Server', 'x-fault-string': 'quote service says no' };
      const a = await call('rules', '1.1', h);
      assert.match(a.body, /<faultcode>soap:Server<\/faultcode><faultstring>quote service says no<\/faultstring>/);
      const custom = await call('rules', '1.1', { ...h, 'x-fault-code': 'q:NoQuote' });
      assert.match(custom.body, /<faultcode>q:NoQuote<\/faultcode>/);
      const b = await call('rules', '1.2', { ...h, 'x-fault-code': 'Receiver' });
      assert.equal(b.status, 422);
      assert.match(
        b.body,
        /<soap:Code><soap:Value>soap:Receiver<\/soap:Value><\/soap:Code><soap:Reason><soap:Text xml:lang="en">quote service says no<\/soap:Text>/,
      );
      const sub = await call('rules', '1.2', { ...h, 'x-fault-code': 'q:NoQuote' });
      assert.match(
        sub.body,
        /<soap:Value>soap:Sender<\/soap:Value><soap:Subcode><soap:Value>q:NoQuote<\/soap:Value><\/soap:Subcode>/,
      );
    });

    it("a Fault section's response_status is honoured on both versions, even when it equals the error's status", async () => {
      for (const version of ['1.1', '1.2'] as const) {
        const same = await call('handled', version);
        assert.equal(same.status, 502, `${version}: ${same.body}`);
        const other = await call('handled', version, { 'x-status': '503' });
        assert.equal(other.status, 503, `${version}: ${other.body}`);
        assert.match(other.body, /recovered from call/);
        assert.match(other.body, /<Sorry xmlns="urn:test:call">call<\/Sorry>/, 'the handler output is the detail');
        assert.equal(other.headers['x-leak'], undefined, 'response_header_<name> never reaches a fault');
      }
    });

    it('a malformed envelope gets 400 with a SOAP Fault on both versions', async () => {
      const bad = await post('/flows/acme/echo/run', '<notxml', { 'content-type': 'text/xml', soapaction: 'Echo' });
      assert.equal(bad.status, 400);
      assert.equal(bad.headers['content-type'], 'text/xml; charset=utf-8');
      assert.match(bad.body, /<faultcode>soap:Client<\/faultcode><faultstring>malformed SOAP envelope: /);
      const noBody = await post(
        '/flows/acme/echo/run',
        `<env:Envelope xmlns:env="${NS12}"><env:Header/></env:Envelope>`,
        { 'content-type': 'application/soap+xml' },
      );
      assert.equal(noBody.status, 400);
      assert.match(noBody.body, /<soap:Value>soap:Sender<\/soap:Value>.*no Body/);
    });

    it('a literal character XML forbids (NUL, U+000C, U+FFFF) inside an envelope is a 400 Fault on both versions', async () => {
      for (const c of ['\u0000', '\u000C', '\uFFFF']) {
        const v11 = await post(
          '/flows/acme/echo/run',
          `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><Echo>a${c}b</Echo></s:Body></s:Envelope>`,
          { 'content-type': 'text/xml', soapaction: 'Echo' },
        );
        assert.equal(v11.status, 400);
        assert.match(v11.body, /<faultcode>soap:Client<\/faultcode>.*which XML does not allow/s);
        const v12 = await post(
          '/flows/acme/echo/run',
          `<env:Envelope xmlns:env="${NS12}"><env:Body><Echo k="${c}"/></env:Body></env:Envelope>`,
          { 'content-type': 'application/soap+xml' },
        );
        assert.equal(v12.status, 400);
        assert.match(v12.body, /soap:Sender.*which XML does not allow/s);
      }
    });

    it('a DOCTYPE inside a SOAP request is a 400 Fault and never reaches a parser', async () => {
      const r = await post(
        '/flows/acme/echo/run',
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>&a;</s:Body></s:Envelope>',
        { 'content-type': 'text/xml', soapaction: 'Echo' },
      );
      assert.equal(r.status, 400);
      assert.match(r.body, /DOCTYPE declarations are not accepted/);
    });

    it('gate refusals stay plain HTTP 401 and 403, not SOAP Faults', async () => {
      const none = await post(
        '/flows/acme/echo/run',
        env11('<Echo/>'),
        { 'content-type': 'text/xml', soapaction: 'Echo' },
        false,
      );
      assert.equal(none.status, 401);
      assert.deepEqual(JSON.parse(none.body), { ok: false, error: 'unauthorized' });
      const wrong = await post(
        '/flows/acme/echo/run',
        env12('<Echo/>'),
        { 'content-type': 'application/soap+xml', authorization: 'Bearer svk_wrong' },
        false,
      );
      assert.equal(wrong.status, 401);
      assert.doesNotMatch(wrong.body, /Envelope/);
      const scoped = await post(
        '/flows/acme/scoped/run',
        env11('<Echo/>'),
        { 'content-type': 'text/xml', soapaction: 'Echo', authorization: `Bearer ${readerKey}` },
        false,
      );
      assert.equal(scoped.status, 403);
      assert.deepEqual(JSON.parse(scoped.body), { ok: false, error: 'forbidden: insufficient scope' });
    });
  });

  describe('WSDL', () => {
    it('is public for a registered enabled tenant, text/xml, with the port address from Host and scheme', async () => {
      const r = await requestWithHeaders(`${server.url}/flows/acme/echo/wsdl`, {
        headers: { host: 'soap.example.com:8443', 'x-forwarded-proto': 'https' },
      });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers['content-type'], 'text/xml; charset=utf-8');
      assert.match(r.body, /location="https:\/\/soap\.example\.com:8443\/flows\/acme\/echo\/run"/);
      assert.match(r.body, /targetNamespace="urn:test:echo"/);
      assert.match(r.body, /<wsdl:operation name="Echo">|<operation name="Echo">/);
      const plain = await requestWithHeaders(`${server.url}/flows/acme/echo/wsdl`);
      assert.match(plain.body, new RegExp(`location="${server.url}/flows/acme/echo/run"`));
    });

    it('is 404 for a disabled tenant, a flow without both SOAP keys and a missing flow', async () => {
      for (const path of [
        '/flows/beta/echo/wsdl',
        '/flows/acme/nosoap/wsdl',
        '/flows/acme/nothing/wsdl',
        '/flows/ghost/echo/wsdl',
      ]) {
        const r = await requestWithHeaders(`${server.url}${path}`);
        assert.equal(r.status, 404, path);
      }
    });

    it('the npm soap client builds itself from the served WSDL and calls the flow', async () => {
      const client = await soap.createClientAsync(`${server.url}/flows/acme/echo/wsdl`);
      client.addHttpHeader('Authorization', `Bearer ${key}`);
      const echo = (client as unknown as Record<string, (args: unknown) => Promise<[Record<string, unknown>, string]>>)
        .EchoAsync!;
      const [result, raw] = await echo.call(client, { v: 'seven' });
      assert.match(raw, /<action>Echo<\/action><version>1\.1<\/version><root>Echo<\/root>/);
      assert.match(raw, /seven/);
      assert.equal(result.version, '1.1');
      assert.equal(result.action, 'Echo');
    });
  });
});

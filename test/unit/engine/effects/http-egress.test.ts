import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressError, EgressTooLargeError, StepConfigError } from '../../../../src/common/errors.js';
import { SOAP_NS } from '../../../../src/common/soap-envelope.js';
import { XmlValue } from '../../../../src/common/xml-value.js';
import type { HttpEgressIR, StepIR } from '../../../../src/ir/types.js';
import { waitFor } from '../../../helpers/wait.js';
import { createHttpEgress, type EgressExchange } from '../../../../src/engine/effects/http-egress.js';

// ---- loopback backend -------------------------------------------------------------------------

const soap11 = (body: string) =>
  `<s:Envelope xmlns:s="${SOAP_NS['1.1']}" xmlns:r="urn:r"><s:Body>${body}</s:Body></s:Envelope>`;
const soap12 = (body: string) => `<e:Envelope xmlns:e="${SOAP_NS['1.2']}"><e:Body>${body}</e:Body></e:Envelope>`;

let tokenCalls = 0;
let lastTokenForm = '';
let bigChunksWritten = 0;
let bigClosedEarly = false;
const sockets = new Set<unknown>();

async function readAll(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function backend(req: IncomingMessage, res: ServerResponse): Promise<void> {
  sockets.add(req.socket);
  const body = await readAll(req);
  const url = new URL(req.url ?? '/', 'http://x');
  const send = (status: number, type: string, text: string): void => {
    res.writeHead(status, { 'content-type': type, 'x-backend': 'stub' }).end(text);
  };
  switch (url.pathname) {
    case '/json':
      return send(200, 'application/json', JSON.stringify({ method: req.method, headers: req.headers, body }));
    case '/xml':
      return send(200, 'application/xml', '<?xml version="1.0"?><quote><price>3</price></quote>');
    case '/text':
      return send(200, 'text/plain', 'pong');
    case '/empty':
      return void res.writeHead(204).end();
    case '/fail':
      return send(503, 'application/json', '{"error":"down"}');
    case '/soap11':
      return send(
        200,
        'text/xml; charset=utf-8',
        soap11(
          `<r:Answer><action>${req.headers.soapaction}</action><ct>${req.headers['content-type']}</ct><got>${body.length}</got></r:Answer>`,
        ),
      );
    case '/soap12':
      return send(
        200,
        'application/soap+xml',
        soap12(`<a:Answer xmlns:a="urn:a"><ct>${req.headers['content-type']?.replace(/"/g, '&quot;')}</ct></a:Answer>`),
      );
    case '/soap-echo':
      return send(200, 'text/xml', body);
    case '/fault11':
      return send(
        500,
        'text/xml',
        soap11('<s:Fault><faultcode>s:Client</faultcode><faultstring>no such item</faultstring></s:Fault>'),
      );
    case '/fault12':
      return send(
        400,
        'application/soap+xml',
        soap12(
          '<e:Fault><e:Code><e:Value>e:Sender</e:Value><e:Subcode><e:Value>app:Stock</e:Value></e:Subcode></e:Code><e:Reason><e:Text xml:lang="en">out of stock</e:Text></e:Reason></e:Fault>',
        ),
      );
    case '/slow': {
      const t = setTimeout(() => send(200, 'text/plain', 'late'), 2000);
      res.on('close', () => clearTimeout(t));
      return;
    }
    case '/big-declared':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(10_000_000) });
      res.write('x'.repeat(1000));
      res.on('close', () => (bigClosedEarly = !res.writableFinished));
      return;
    case '/big': {
      // Streams up to 200 chunks of 64 KiB; the client must hang up long before the end.
      bigChunksWritten = 0;
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(65536, 0x20);
      const pump = () => {
        while (bigChunksWritten < 200 && !res.destroyed) {
          bigChunksWritten++;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      res.on('close', () => (bigClosedEarly = !res.writableFinished));
      return pump();
    }
    case '/token':
      tokenCalls++;
      lastTokenForm = body;
      return send(
        200,
        'application/json',
        JSON.stringify({ access_token: `tok-${tokenCalls}`, token_type: 'Bearer', expires_in: 3600 }),
      );
    case '/protected':
      return req.headers.authorization === 'Bearer tok-1'
        ? send(200, 'application/json', '{"ok":true}')
        : send(401, 'text/plain', 'no');
    default:
      return send(404, 'text/plain', 'nope');
  }
}

let server: Server;
let base: string;
const egress = createHttpEgress({ defaultReadTimeoutMs: 5000 });
const exchanges: EgressExchange[] = [];
const traced = createHttpEgress({ onExchange: (e) => exchanges.push(e) });

before(async () => {
  server = createServer((req, res) => void backend(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.SVC_TEST_EGRESS_BASE = base;
});
after(async () => {
  await egress.close();
  await traced.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

// ---- helpers ----------------------------------------------------------------------------------

function step(http: Partial<HttpEgressIR>, name = 'call'): StepIR {
  return {
    name,
    line: 1,
    effects: ['http_egress'],
    validate: [],
    responseHeaders: {},
    setCtx: {},
    http: { endpoint: `${base}/json`, method: 'POST', headers: {}, ...http },
  };
}

/** A tiny stand-in for expr/template.ts: `{{ ctx.a.b }}` holes, a whole hole keeps its type. */
function renderer(ctx: Record<string, unknown>) {
  const lookup = (path: string): unknown =>
    path
      .split('.')
      .slice(1)
      .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], ctx);
  return (template: string): unknown => {
    const whole = /^\{\{\s*(ctx(?:\.\w+)+)\s*\}\}$/.exec(template);
    if (whole) return lookup(whole[1]!);
    return template.replace(/\{\{\s*(ctx(?:\.\w+)+)\s*\}\}/g, (_m, p: string) => String(lookup(p)));
  };
}

async function rejects(p: Promise<unknown>, check: (err: unknown) => boolean): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    assert.ok(check(err), `unexpected error: ${String(err)}`);
    return err;
  }
  assert.fail('expected the step to fail');
}

// ---- tests ------------------------------------------------------------------------------------

test('a JSON message is POSTed as JSON with rendered headers and the JSON answer becomes the output', async () => {
  const ctx = { correlation_id: 'c-1', input: { id: 7 } };
  const r = await egress(
    step({ headers: { 'X-Request-Id': '{{ ctx.correlation_id }}' } }),
    { id: 7 },
    ctx,
    renderer(ctx),
  );
  assert.equal(r.status, 200);
  assert.equal(r.headers['x-backend'], 'stub');
  const echoed = r.output as { method: string; headers: Record<string, string>; body: string };
  assert.equal(echoed.method, 'POST');
  assert.equal(echoed.headers['content-type'], 'application/json');
  assert.equal(echoed.headers['x-request-id'], 'c-1');
  assert.equal(echoed.body, '{"id":7}');
});

test('${VAR} in a literal endpoint is read from the environment at run time; {{ }} holes are rendered', async () => {
  const ctx = { path: 'json' };
  const r = await egress(
    step({ endpoint: '${SVC_TEST_EGRESS_BASE}/{{ ctx.path }}', method: 'PUT' }),
    'hello',
    ctx,
    renderer(ctx),
  );
  const echoed = r.output as { method: string; headers: Record<string, string>; body: string };
  assert.equal(echoed.method, 'PUT');
  assert.equal(echoed.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(echoed.body, 'hello');
});

test('an unset ${VAR} fails the step naming the variable', async () => {
  const env = createHttpEgress({ env: {} });
  await rejects(
    env(step({ endpoint: '${PRICING_URL}/quote' }), {}, {}, renderer({})),
    (e) => e instanceof StepConfigError && /PRICING_URL/.test(e.detail) && /'call'/.test(e.detail),
  );
  await env.close();
});

test('XML messages go out as application/xml, content_type overrides, and responses parse by type', async () => {
  const r = await egress(step({}), new XmlValue('<a>1</a>', 'a'), {}, renderer({}));
  assert.equal(
    (r.output as { headers: Record<string, string> }).headers['content-type'],
    'application/xml; charset=utf-8',
  );
  const o = await egress(step({ contentType: 'application/vnd.acme+json' }), { a: 1 }, {}, renderer({}));
  assert.equal((o.output as { headers: Record<string, string> }).headers['content-type'], 'application/vnd.acme+json');
  const xml = await egress(step({ endpoint: `${base}/xml`, method: 'GET' }), { ignored: true }, {}, renderer({}));
  assert.ok(xml.output instanceof XmlValue);
  assert.equal(xml.output.root, 'quote');
  assert.equal((await egress(step({ endpoint: `${base}/text` }), null, {}, renderer({}))).output, 'pong');
  assert.equal((await egress(step({ endpoint: `${base}/empty` }), null, {}, renderer({}))).output, null);
});

test('a non-2xx answer fails the step with an EgressError (502) carrying the backend status', async () => {
  const err = (await rejects(
    egress(step({ endpoint: `${base}/fail` }, 'price'), {}, {}, renderer({})),
    (e) => e instanceof EgressError,
  )) as EgressError;
  assert.equal(err.status, 502);
  assert.equal(err.details!.step, 'price');
  assert.equal(err.details!.upstreamStatus, 503);
  assert.match(err.detail, /step 'price': backend answered HTTP 503/);
});

test('a slow backend fails the step at the read timeout', async () => {
  const started = Date.now();
  await rejects(
    egress(step({ endpoint: `${base}/slow`, readTimeoutMs: 150 }), {}, {}, renderer({})),
    (e) => e instanceof EgressError && /150 ms read timeout/.test(e.detail),
  );
  assert.ok(Date.now() - started < 1500);
});

test('a refused connection fails the step with an EgressError', async () => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  await rejects(
    egress(step({ endpoint: `http://127.0.0.1:${port}/x`, connectTimeoutMs: 500 }), {}, {}, renderer({})),
    (e) => e instanceof EgressError && /ECONNREFUSED/.test(e.detail),
  );
});

test('a streamed oversized response is abandoned at the ceiling, never read whole', async () => {
  bigClosedEarly = false;
  const err = (await rejects(
    traced(step({ endpoint: `${base}/big`, maxResponseBytes: 200_000 }), {}, {}, renderer({})),
    (e) => e instanceof EgressTooLargeError,
  )) as EgressTooLargeError;
  assert.equal(err.limitBytes, 200_000);
  assert.equal(err.status, 413);
  // The backend learns of the dropped connection a moment later.
  await waitFor('the backend to see the connection close', () => bigClosedEarly, 5000);
  assert.ok(bigChunksWritten < 200, `backend wrote ${bigChunksWritten} chunks`);
  assert.ok(bigClosedEarly, 'the connection was dropped before the backend finished');
  assert.deepEqual(exchanges.at(-1)?.body, null);
});

test('the ceiling resolves step over flow over platform, and a declared length over it is not read', async () => {
  let platform = 3; // 'pong' is 4 bytes
  const small = createHttpEgress({ platformMaxMessageBytes: () => platform });
  await rejects(
    small(step({ endpoint: `${base}/text` }), null, {}, renderer({})),
    (e) => e instanceof EgressTooLargeError,
  );
  platform = 4; // read per call
  assert.equal((await small(step({ endpoint: `${base}/text` }), null, {}, renderer({}))).output, 'pong');
  await small.close();
  const r = await egress(step({ endpoint: `${base}/text` }), null, {}, renderer({}), { flowMaxMessageBytes: 4 });
  assert.equal(r.output, 'pong');
  await rejects(
    egress(step({ endpoint: `${base}/text` }), null, {}, renderer({}), { flowMaxMessageBytes: 3 }),
    (e) => e instanceof EgressTooLargeError,
  );
  await rejects(
    egress(step({ endpoint: `${base}/text`, maxResponseBytes: 3 }), null, {}, renderer({}), {
      flowMaxMessageBytes: 100,
    }),
    (e) => e instanceof EgressTooLargeError,
  );
  bigClosedEarly = false;
  await rejects(
    egress(step({ endpoint: `${base}/big-declared` }), null, {}, renderer({})),
    (e) => e instanceof EgressTooLargeError,
  );
});

test('sockets are kept alive and reused across calls to the same origin', async () => {
  const pool = createHttpEgress();
  sockets.clear();
  for (let i = 0; i < 8; i++) await pool(step({ endpoint: `${base}/text` }), null, {}, renderer({}));
  // sequential calls: at most a second socket while the first is being released, never one per call
  assert.ok(sockets.size <= 2, `${sockets.size} sockets for 8 calls`);
  await pool.close();
});

test('SOAP 1.1 wraps the message, sends SOAPAction and unwraps the Body for the next step', async () => {
  const r = await egress(
    step({ endpoint: `${base}/soap11`, soapVersion: '1.1', soapAction: 'urn:GetPrice' }),
    new XmlValue('<?xml version="1.0"?><q>1</q>', 'q'),
    {},
    renderer({}),
  );
  assert.ok(r.output instanceof XmlValue);
  assert.equal(r.output.root, 'Answer');
  assert.match(
    r.output.xml,
    /^<r:Answer xmlns:r="urn:r"><action>"urn:GetPrice"<\/action><ct>text\/xml; charset=utf-8<\/ct>/,
  );
  const echoed = await egress(
    step({ endpoint: `${base}/soap-echo`, soapVersion: '1.1', soapOperation: 'Op' }),
    new XmlValue('<q>1</q>', 'q'),
    {},
    renderer({}),
  );
  assert.equal((echoed.output as XmlValue).xml, '<q>1</q>');
});

test('SOAP 1.2 uses application/soap+xml with the action parameter (soap_operation as fallback)', async () => {
  const r = await egress(
    step({ endpoint: `${base}/soap12`, soapVersion: '1.2', soapOperation: 'GetPrice' }),
    { a: 1 },
    {},
    renderer({}),
  );
  assert.equal((r.output as XmlValue).root, 'Answer');
  assert.ok((r.output as XmlValue).xml.includes('application/soap+xml; charset=utf-8; action=&quot;GetPrice&quot;'));
});

test('a SOAP Fault answer fails the step and fills ctx.soap_fault_code / ctx.soap_fault_string (1.1 and 1.2)', async () => {
  const ctx: Record<string, unknown> = {};
  const e11 = (await rejects(
    egress(step({ endpoint: `${base}/fault11`, soapVersion: '1.1' }), null, ctx, renderer(ctx)),
    (e) => e instanceof EgressError,
  )) as EgressError;
  assert.deepEqual([ctx.soap_fault_code, ctx.soap_fault_string], ['s:Client', 'no such item']);
  assert.equal(e11.details!.upstreamStatus, 500);
  const ctx2: Record<string, unknown> = {};
  await rejects(
    egress(step({ endpoint: `${base}/fault12`, soapVersion: '1.2' }), null, ctx2, renderer(ctx2)),
    (e) => e instanceof EgressError && /out of stock/.test(e.detail),
  );
  assert.deepEqual([ctx2.soap_fault_code, ctx2.soap_fault_string], ['app:Stock', 'out of stock']);
});

test('bearer_token is rendered into Authorization', async () => {
  const ctx = { api_token: 's3cret' };
  const r = await egress(step({ bearerToken: '{{ ctx.api_token }}' }), {}, ctx, renderer(ctx));
  assert.equal((r.output as { headers: Record<string, string> }).headers.authorization, 'Bearer s3cret');
});

test('oauth2 client credentials: one form POST to the token URL, then the cached token is reused', async () => {
  tokenCalls = 0;
  const oauth = createHttpEgress();
  const ctx = { cid: 'client-a', csecret: 'shh', url: `${base}/token` };
  const s = step({
    endpoint: `${base}/protected`,
    oauth2: {
      tokenUrl: '{{ ctx.url }}',
      clientId: '{{ ctx.cid }}',
      clientSecret: '{{ ctx.csecret }}',
      scope: 'read write',
      audience: 'api',
    },
  });
  for (let i = 0; i < 3; i++) assert.deepEqual((await oauth(s, {}, ctx, renderer(ctx))).output, { ok: true });
  assert.equal(tokenCalls, 1);
  const form = new URLSearchParams(lastTokenForm);
  assert.deepEqual(Object.fromEntries(form), {
    grant_type: 'client_credentials',
    client_id: 'client-a',
    client_secret: 'shh',
    scope: 'read write',
    audience: 'api',
  });
  await oauth.close();
});

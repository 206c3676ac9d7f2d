import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rawRequest } from './helpers/raw-http.js';
import {
  corruptArtifact,
  createKey,
  createTenant,
  deployAll,
  deployFixture,
  inForce,
  setSystemConfig,
} from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

const FLOWS = [
  'echo',
  'headers',
  'text',
  'xml-out',
  'shaped',
  'corr',
  'rules',
  'defect',
  'fault-ok',
  'fault-status',
  'fault-fail',
  'egress-fail',
  'fault-egress',
  'small',
  'corrupt',
  'platform-cap',
  'header-echo',
] as const;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('POST /flows/{tenant}/{name}/run over HTTP', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key: string;

  const run = (
    flow: string,
    body: string | Buffer | undefined,
    headers: Record<string, string> = {},
    tenant = 'acme',
  ) =>
    fetch(`${server.url}/flows/${tenant}/${flow}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body,
    });

  before(async () => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    await deployAll(sandbox, FLOWS);
    // Corrupt one artifact's bytes before the server ever reads it (verified IR is cached by hash).
    corruptArtifact(sandbox, 'acme', 'corrupt');
    server = await startServer(sandbox);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  describe('statuses', () => {
    it('answers 200 with the output of the last step', async () => {
      const res = await run('echo', '{"a":1,"b":[true,null]}');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.deepEqual(await res.json(), { a: 1, b: [true, null] });
    });

    it('answers alike on one keep-alive connection before and after it passes from the lean front to node:http', async () => {
      // The first /run is read by the lean front; GET /health is not its kind, so it hands the
      // connection to node:http, which serves the second /run: both /run answers are the same.
      const runRequest = (id: number) =>
        [
          'POST /flows/acme/echo/run HTTP/1.1',
          `Host: 127.0.0.1:${server.port}`,
          `Authorization: Bearer ${key}`,
          'Content-Type: application/json',
          `Content-Length: ${`{"n":${id}}`.length}`,
          '',
          `{"n":${id}}`,
        ].join('\r\n');
      const health = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`;
      const res = await rawRequest(server.port, runRequest(1) + health + runRequest(2), {
        waitMs: 1000,
        untilClose: true,
      });
      const answers = res.raw.split(/(?=HTTP\/1\.1 )/);
      assert.equal(answers.length, 3, res.raw);
      const parts = answers.map((a) => {
        const [head, body] = a.split('\r\n\r\n');
        const headers = head!
          .split('\r\n')
          .slice(1)
          .map((line) => line.split(':', 1)[0]!.toLowerCase());
        return { status: head!.split(' ')[1], headers: headers.sort(), body };
      });
      assert.deepEqual(
        parts.map((p) => [p.status, p.body]),
        [
          ['200', '{"n":1}'],
          ['200', '{"ok":true}'],
          ['200', '{"n":2}'],
        ],
      );
      assert.deepEqual(parts[0]!.headers, parts[2]!.headers, 'the same header names from either front');
      assert.equal(res.closed, false);
    });

    it('answers 400 invalid flow identifier for an uppercase tenant, before any lookup', async () => {
      const res = await run('x', '{}', {}, 'Acme');
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { ok: false, error: 'invalid flow identifier' });
    });

    it('answers 400 invalid flow identifier for a flow name over 128 bytes, and accepts 128 (404)', async () => {
      const long = await run('a'.repeat(129), '{}');
      assert.equal(long.status, 400);
      assert.deepEqual(await long.json(), { ok: false, error: 'invalid flow identifier' });
      const edge = await run('a'.repeat(128), '{}');
      assert.equal(edge.status, 404);
    });

    it('checks the path before the key: a bad path without a key is 400, not 401', async () => {
      const res = await fetch(`${server.url}/flows/acme/Bad.Name/run`, { method: 'POST', body: '{}' });
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { ok: false, error: 'invalid flow identifier' });
    });

    it('ignores X-Svc-Signature when the server has no --secret', async () => {
      const res = await run('echo', '{"s":1}', { 'x-svc-signature': 'not-even-hex' });
      assert.equal(res.status, 200);
    });

    it('answers 400 for malformed JSON', async () => {
      const res = await run('echo', '{"a":');
      assert.equal(res.status, 400);
      const body = (await res.json()) as { ok: boolean; error: string };
      assert.equal(body.ok, false);
      assert.match(body.error, /JSON/);
    });

    it('answers 400 for malformed XML', async () => {
      const res = await run('echo', '<a><b></a>', { 'content-type': 'application/xml' });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { ok: boolean; error: string };
      assert.equal(body.ok, false);
      assert.equal(typeof body.error, 'string');
    });

    it('answers 400 naming the limit for JSON nested deeper than 128 levels (20 KB of arrays), and stays up', async () => {
      const deep = '['.repeat(5000) + ']'.repeat(5000);
      const res = await run('echo', deep);
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: string }).error, /nests deeper than 128 levels/);
      assert.equal((await fetch(`${server.url}/health`)).status, 200);
    });

    it('treats keys named constructor, __proto__ or toString as data in a flow that reads the input', async () => {
      const ok = await run('rules', '{"id": 1, "constructor": 1, "__proto__": 2, "toString": 3, "amount": 5}');
      assert.equal(ok.status, 200, await ok.clone().text());
      const refused = await run('rules', '{"id": 1, "constructor": 1, "amount": -5}');
      assert.equal(refused.status, 422, 'the rules still judge the data');
    });

    it('treats a key named like an object internal as data whatever its value, null included', async () => {
      for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'])
        for (const value of ['null', '0', '""', '{}', '[]', '{"name": "Map"}']) {
          const fields = `"${name}": ${value}, "nested": {"${name}": ${value}}`;
          const ok = await run('rules', `{"id": 1, ${fields}, "amount": 5}`);
          assert.equal(ok.status, 200, `${fields}: ${await ok.clone().text()}`);
          const refused = await run('rules', `{"id": 1, ${fields}, "amount": -5}`);
          assert.equal(refused.status, 422, `${fields}: the rules still judge the data`);
          const echoed = await run('echo', `{${fields}}`);
          assert.equal(echoed.status, 200, `${fields} echoed: ${await echoed.clone().text()}`);
        }
    });

    it('answers 400 for XML whose character references name characters XML forbids', async () => {
      const xml = '<r>&#0;&#xD800;&#x110000;</r>';
      const res = await run('echo', xml, { 'content-type': 'application/xml' });
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: string }).error, /character reference &#0;/);
    });

    it('answers 400 for XML holding a literal character XML forbids (NUL, controls, U+FFFE, U+FFFF), and still takes tab, LF and CR', async () => {
      for (const c of ['\u0000', '\u0001', '\u0008', '\u000B', '\u000C', '\u001F', '\uFFFE', '\uFFFF']) {
        const hex = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
        for (const xml of [`<r>a${c}b</r>`, `<r k="${c}"/>`]) {
          const res = await run('echo', xml, { 'content-type': 'application/xml' });
          assert.equal(res.status, 400, `U+${hex} in ${JSON.stringify(xml)}`);
          assert.match(((await res.json()) as { error: string }).error, new RegExp(`character U\\+${hex}`));
        }
      }
      const ok = await run('echo', '<r>a\tb\nc\r\nd</r>', { 'content-type': 'application/xml' });
      assert.equal(ok.status, 200);
      assert.equal(await ok.text(), '<r>a\tb\nc\r\nd</r>');
    });

    it('answers 400 {"error","step"} for a failed syntactic rule', async () => {
      const res = await run('rules', '{"amount":1}');
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { error: 'id is required', step: 'check' });
    });

    it('answers 422 {"error","step"} for a failed semantic rule', async () => {
      const res = await run('rules', '{"id":"x","amount":0}');
      assert.equal(res.status, 422);
      assert.deepEqual(await res.json(), { error: 'amount must be positive', step: 'check' });
    });

    it("answers 404 flow '<tenant>/<name>' not found when no flow is deployed", async () => {
      const res = await run('nothing-here', '{}');
      assert.equal(res.status, 404);
      assert.deepEqual(await res.json(), { ok: false, error: "flow 'acme/nothing-here' not found" });
    });

    it('answers 500 flow execution failed for a defect in the flow', async () => {
      const res = await run('defect', '{}');
      assert.equal(res.status, 500);
      assert.deepEqual(await res.json(), { ok: false, error: 'flow execution failed' });
    });

    it('answers 500 fault handler failed when the fault handler itself fails', async () => {
      const res = await run('fault-fail', '{"amount":0}');
      assert.equal(res.status, 500);
      assert.deepEqual(await res.json(), { ok: false, error: 'fault handler failed' });
    });

    it('answers 500 internal error for an artifact failing its integrity check, and does not run it', async () => {
      const res = await run('corrupt', '{"a":1}');
      assert.equal(res.status, 500);
      assert.deepEqual(await res.json(), { ok: false, error: 'internal error' });
      const again = await run('corrupt', '{"a":1}');
      assert.equal(again.status, 500);
    });

    it('answers 502 flow execution failed when a call out fails', async () => {
      const res = await run('egress-fail', '{}');
      assert.equal(res.status, 502);
      assert.deepEqual(await res.json(), { ok: false, error: 'flow execution failed' });
    });
  });

  describe('the fault handler', () => {
    it("answers with the status the error would have had and the handler's output", async () => {
      const res = await run('fault-ok', '{"amount":0}');
      assert.equal(res.status, 422);
      assert.deepEqual(await res.json(), { sorry: 'amount must be positive', step: 'check' });
    });

    it('keeps the 502 of a failed call out, with the handler output', async () => {
      const res = await run('fault-egress', '{}', { 'x-correlation-id': 'fe-1' });
      assert.equal(res.status, 502);
      assert.deepEqual(await res.json(), { failed_step: 'call', id: 'fe-1' });
    });

    it("applies the fault step's own response_status and response_header_<name>", async () => {
      const res = await run('fault-status', '{"amount":0}');
      assert.equal(res.status, 299);
      assert.equal(res.headers.get('x-fault'), 'handled');
      assert.deepEqual(await res.json(), { handled: true });
    });

    it('does not run when nothing fails', async () => {
      const res = await run('fault-ok', '{"amount":5}');
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { amount: 5 });
    });
  });

  describe('output typing and response shaping', () => {
    it('sends a string output verbatim as text/plain; charset=utf-8', async () => {
      const res = await run('text', '{"name":"Zoë"}');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(await res.text(), 'hello Zoë "quoted"');
    });

    it('sends a null output as an empty body without a content type', async () => {
      const res = await run('echo', '');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), null);
      assert.equal(await res.text(), '');
    });

    it('sends a JSON null body through as an empty answer too', async () => {
      const res = await run('echo', 'null');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), null);
      assert.equal(await res.text(), '');
    });

    it('sends an XML output as application/xml; charset=utf-8', async () => {
      const res = await run('xml-out', '{"name":"x&y"}');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
      const text = await res.text();
      assert.match(text, /<greeting>\s*<to>x&amp;y<\/to>\s*<\/greeting>/);
    });

    it('applies response_status and response_header_x_correlation_id from the flow', async () => {
      const res = await run('shaped', '{}', { 'x-correlation-id': 'corr-123' });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('x-correlation-id'), 'corr-123');
      assert.equal(res.headers.get('x-extra'), 'shaped');
      assert.deepEqual(await res.json(), { id: 'corr-123' });
    });

    it('answers 500 flow execution failed when a response header would carry a line break, and goes on serving', async () => {
      const bad = await run('header-echo', JSON.stringify({ v: 'a\r\nset-cookie: x=1' }));
      assert.equal(bad.status, 500);
      assert.equal(bad.headers.get('set-cookie'), null);
      assert.deepEqual(await bad.json(), { ok: false, error: 'flow execution failed' });
      const good = await run('header-echo', JSON.stringify({ v: 'fine' }));
      assert.equal(good.status, 200);
      assert.equal(good.headers.get('x-echo'), 'fine');
    });

    it('gives each of many concurrent requests its own answer (answers are written together at the end of a turn)', async () => {
      const ids = Array.from({ length: 64 }, (_, i) => `burst-${i}`);
      const answers = await Promise.all(
        ids.map(async (id) => {
          const res = await run('shaped', '{}', { 'x-correlation-id': id });
          return {
            status: res.status,
            header: res.headers.get('x-correlation-id'),
            body: (await res.json()) as { id: string },
          };
        }),
      );
      answers.forEach((a, i) => assert.deepEqual(a, { status: 201, header: ids[i], body: { id: ids[i] } }));
    });

    it('does not echo the correlation id unless the flow sets it', async () => {
      const res = await run('corr', '{}', { 'x-correlation-id': 'abc', 'x-request-id': 'def' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-correlation-id'), null);
      assert.deepEqual(await res.json(), { correlation_id: 'abc' });
    });

    it('takes the first of repeated X-Correlation-ID headers', async () => {
      const head = [
        'POST /flows/acme/corr/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        `Authorization: Bearer ${key}`,
        'X-Correlation-ID: first-id',
        'X-Correlation-ID: second-id',
        'Content-Length: 2',
        'Connection: close',
        '',
        '{}',
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 200);
      assert.deepEqual(JSON.parse(res.body), { correlation_id: 'first-id' });
    });

    it('takes X-Request-ID when there is no X-Correlation-ID', async () => {
      const res = await run('corr', '{}', { 'x-request-id': 'req-7' });
      assert.deepEqual(await res.json(), { correlation_id: 'req-7' });
    });

    it('generates a UUID v4 when neither header is given, a fresh one per request', async () => {
      const a = (await (await run('corr', '{}')).json()) as { correlation_id: string };
      const b = (await (await run('corr', '{}')).json()) as { correlation_id: string };
      assert.match(a.correlation_id, UUID_V4);
      assert.match(b.correlation_id, UUID_V4);
      assert.notEqual(a.correlation_id, b.correlation_id);
    });
  });

  describe('ctx.headers', () => {
    it('lowercases names, joins duplicates with ", ", strips hop-by-hop and credential headers', async () => {
      const head = [
        `POST /flows/acme/headers/run HTTP/1.1`,
        `Host: 127.0.0.1:${server.port}`,
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'X-Custom-Thing: one',
        'x-custom-thing: two',
        'X-Api-Key: leaked',
        'Cookie: session=1',
        'Proxy-Authorization: Basic Zm9vOmJhcg==',
        'Keep-Alive: timeout=5',
        'Connection: close, x-dropped',
        'X-Dropped: by-connection',
        'TE: trailers',
        'Content-Length: 2',
        '',
        '{}',
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 200);
      const headers = JSON.parse(res.body) as Record<string, string>;
      assert.equal(headers['x-custom-thing'], 'one, two');
      assert.equal(headers['content-type'], 'application/json');
      for (const absent of [
        'authorization',
        'proxy-authorization',
        'cookie',
        'x-api-key',
        'keep-alive',
        'connection',
        'te',
        'x-dropped',
      ]) {
        assert.equal(headers[absent], undefined, `${absent} must not reach ctx.headers`);
      }
      for (const name of Object.keys(headers)) assert.equal(name, name.toLowerCase());
    });
  });

  describe('request content types', () => {
    it('parses application/json', async () => {
      const res = await run('echo', '[1,2]', { 'content-type': 'application/json; charset=utf-8' });
      assert.deepEqual(await res.json(), [1, 2]);
    });

    it('parses an unrecognised content type as JSON', async () => {
      const ok = await run('echo', '{"x":2}', { 'content-type': 'application/x-whatever' });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { x: 2 });
      const bad = await run('echo', 'not json', { 'content-type': 'text/plain' });
      assert.equal(bad.status, 400);
    });

    it('parses a body without a content type as JSON', async () => {
      const res = await fetch(`${server.url}/flows/acme/echo/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: new Uint8Array(Buffer.from('{"y":3}')),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { y: 3 });
    });

    it('keeps application/xml as an XML value through the flow', async () => {
      const xml = '<order id="7"><item>pen</item></order>';
      const res = await run('echo', xml, { 'content-type': 'application/xml' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
      const text = await res.text();
      assert.match(text, /<order id="7">\s*<item>pen<\/item>\s*<\/order>/);
    });

    it('accepts text/xml without SOAP markers as plain XML (no crash, no SOAP envelope)', async () => {
      const res = await run('echo', '<note><to>x</to></note>', { 'content-type': 'text/xml' });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.match(text, /<note>\s*<to>x<\/to>\s*<\/note>/);
      assert.doesNotMatch(text, /Envelope/);
    });

    it('answers 400 for malformed text/xml without SOAP markers', async () => {
      const res = await run('echo', '<note><to>x</note>', { 'content-type': 'text/xml' });
      assert.equal(res.status, 400);
    });
  });

  describe('size ceilings', () => {
    it('reads the platform max_message_bytes per request', async () => {
      const body = JSON.stringify({ pad: 'x'.repeat(300) });
      const answer = async () => {
        const res = await run('platform-cap', body);
        return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
      };
      assert.equal((await answer()).status, 200);
      setSystemConfig(sandbox, { max_message_bytes: 200 });
      try {
        const res = await inForce(answer, (a) => a.status === 413);
        assert.equal(res.status, 413);
        assert.equal(res.type, 'text/plain; charset=utf-8');
        assert.equal(res.text, 'payload reached size limit');
      } finally {
        setSystemConfig(sandbox, { max_message_bytes: 1048576 });
      }
      assert.equal((await inForce(answer, (a) => a.status === 200)).status, 200);
    });

    it("applies the flow's max_message_bytes override", async () => {
      assert.equal((await run('small', '{"a":"short"}')).status, 200);
      const res = await run('small', JSON.stringify({ pad: 'x'.repeat(200) }));
      assert.equal(res.status, 413);
      assert.equal(await res.text(), 'payload reached size limit');
      // The platform ceiling is far larger; the override alone refused it.
      assert.equal((await run('echo', JSON.stringify({ pad: 'x'.repeat(200) }))).status, 200);
    });

    it('refuses a declared Content-Length over the cap with 413 without the body being sent', async () => {
      const head = [
        'POST /flows/acme/small/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Content-Length: 5000000',
        '',
        '',
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 413);
      assert.equal(res.body, 'payload reached size limit');
    });
    it('answers 413 to Expect: 100-continue over the cap without inviting the body', async () => {
      const head = [
        'POST /flows/acme/small/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Content-Length: 5000',
        'Expect: 100-continue',
        '',
        '',
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 413);
      assert.doesNotMatch(res.raw, /100 Continue/);
    });

    it('sends 100 Continue when the body will be read, and runs the flow', async () => {
      const head = [
        'POST /flows/acme/echo/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Content-Length: 7',
        'Expect: 100-continue',
        '',
        '',
      ].join('\r\n');
      const res = await rawRequest(server.port, head, { afterContinue: '{"c":1}' });
      assert.match(res.raw, /^HTTP\/1\.1 100 Continue/);
      assert.equal(res.status, 200);
      assert.deepEqual(JSON.parse(res.body), { c: 1 });
    });

    it('refuses a chunked body (no Content-Length) with 413 once it passes the cap', async () => {
      const chunk = 'x'.repeat(150);
      const head = [
        'POST /flows/acme/small/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        '',
        `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 413);
      assert.equal(res.body, 'payload reached size limit');
    });
  });

  describe('metadata, connector events, health', () => {
    it('GET /flows/{t}/{n} answers the latest artifact, and moves after a new deploy without restart', async () => {
      const get = async () => {
        const res = await fetch(`${server.url}/flows/acme/echo`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(res.status, 200);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        return (await res.json()) as Record<string, string>;
      };
      const first = await get();
      assert.deepEqual(Object.keys(first).sort(), ['created_at', 'hash', 'name', 'tenant', 'version']);
      assert.equal(first.tenant, 'acme');
      assert.equal(first.name, 'echo');
      assert.equal(first.version, '1');
      assert.match(first.hash!, /^[0-9a-f]{64}$/);
      assert.match(first.created_at!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      deployFixture(sandbox, 'echo', '2');
      const second = await inForce(get, (m) => m.version === '2');
      assert.equal(second.version, '2');
    });

    it('GET /flows/{t}/{n} answers 500 internal error for an artifact failing its integrity check', async () => {
      const res = await fetch(`${server.url}/flows/acme/corrupt`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 500);
      assert.deepEqual(await res.json(), { ok: false, error: 'internal error' });
    });

    it('GET /flows/{t}/{n} answers 404 for a missing flow and 400 for a bad name', async () => {
      const missing = await fetch(`${server.url}/flows/acme/ghost`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(missing.status, 404);
      assert.deepEqual(await missing.json(), { ok: false, error: "flow 'acme/ghost' not found" });
      const bad = await fetch(`${server.url}/flows/acme/GHOST`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(bad.status, 400);
      assert.deepEqual(await bad.json(), { ok: false, error: 'invalid flow identifier' });
    });

    const connector = (body: string | Buffer, flow = 'echo') =>
      fetch(`${server.url}/connector/events/acme/${flow}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });

    it('POST /connector/events answers 202 with an empty body', async () => {
      const res = await connector(
        JSON.stringify({ event_type: 'connector_received', message_id: 'm-1', worker_id: 3, body_bytes: 10 }),
      );
      assert.equal(res.status, 202);
      assert.equal(await res.text(), '');
    });

    it('POST /connector/events answers 400 for an event_type outside the two values', async () => {
      const res = await connector(JSON.stringify({ event_type: 'connector_exploded' }));
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { ok: boolean }).ok, false);
    });

    it('POST /connector/events answers 400 for an unparseable body', async () => {
      const res = await connector('{nope');
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: string }).error, /invalid JSON/);
    });

    it('POST /connector/events reports a body over 64 KiB as 400 invalid JSON', async () => {
      const big = JSON.stringify({ event_type: 'connector_received', pad: 'x'.repeat(70 * 1024) });
      const res = await connector(big);
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: string }).error, /invalid JSON/);
    });

    it('POST /connector/events answers 400 for a bad path component', async () => {
      const res = await connector('{"event_type":"connector_received"}', 'Bad');
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { ok: false, error: 'invalid flow identifier' });
    });

    it('answers an unknown route 404 in the service body shape', async () => {
      const res = await fetch(`${server.url}/flows/acme/echo/run/extra`, { method: 'POST', body: '{}' });
      assert.equal(res.status, 404);
      const body = (await res.json()) as { ok: boolean; error: string };
      assert.equal(body.ok, false);
      assert.match(body.error, /no route/);
    });

    it('GET /health answers 200 {"ok":true} without a key', async () => {
      const res = await fetch(`${server.url}/health`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { ok: true });
    });
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jsonlEvents, logRows, waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployAll, setSystemConfig } from './helpers/registry-setup.js';
import { rawRequest } from './helpers/raw-http.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

/** The 25 globally masked field names (docs/events.md). */
const GLOBAL_MASK = [
  'password',
  'passwd',
  'pwd',
  'secret',
  'client_secret',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'bearer_token',
  'api_key',
  'apikey',
  'x_api_key',
  'authorization',
  'proxy_authorization',
  'www_authenticate',
  'cookie',
  'set_cookie',
  'private_key',
  'session_id',
  'ssn',
  'credit_card',
  'card_number',
  'cvv',
  'pin',
];
const TRIM_BYTES = 64;

describe('the event log of /run deliveries', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key: string;

  const run = (flow: string, body: unknown, correlationId: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/flows/acme/${flow}/run`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-correlation-id': correlationId,
        ...headers,
      },
      body: JSON.stringify(body),
    });
  const rowsOf = async (correlationId: string) => {
    await waitForLogRows(sandbox, { correlation_id: correlationId, event: 'completed' });
    return logRows(sandbox, { correlation_id: correlationId });
  };

  before(async () => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    await deployAll(sandbox, ['masked', 'quiet', 'trimmed', 'echo']);
    setSystemConfig(sandbox, { log_payload_max_bytes: TRIM_BYTES });
    server = await startServer(sandbox);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('writes received and completed rows, without a step, with the answer status on completed', async () => {
    assert.equal((await run('masked', { n: 1 }, 'ev-basic-1')).status, 200);
    const rows = await rowsOf('ev-basic-1');
    assert.deepEqual(
      rows.map((r) => r.event),
      ['received', 'completed'],
    );
    for (const r of rows) {
      assert.equal(r.step, null);
      assert.equal(r.tenant, 'acme');
      assert.equal(r.flow, 'masked');
      assert.match(r.ts, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    }
    assert.equal(rows[1]!.http_status, 200);
  });

  it('records a failed delivery as completed with its status', async () => {
    const res = await fetch(`${server.url}/flows/acme/masked/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-correlation-id': 'ev-bad-json' },
      body: '{',
    });
    assert.equal(res.status, 400);
    // The delivery entered (past the gate) and finished with 400 before its flow started.
    const rows = await rowsOf('ev-bad-json');
    assert.deepEqual(
      rows.map((r) => [r.event, r.http_status, r.step]),
      [
        ['received', null, null],
        ['completed', 400, null],
      ],
    );
    assert.match(rows[1]!.reason ?? '', /malformed JSON/);
  });

  it('keeps the whole masked payload at log_level full', async () => {
    const body = { order: { id: 'o-1', lines: [1, 2, 3] }, note: 'x'.repeat(200) };
    await run('masked', body, 'ev-full-1');
    const rows = await rowsOf('ev-full-1');
    assert.deepEqual(JSON.parse(rows[0]!.payload!), body);
    assert.equal(rows[0]!.payload_truncated, 0);
    assert.deepEqual(JSON.parse(rows[1]!.payload!), body);
  });

  it('keeps no payload at log_level event_only', async () => {
    await run('quiet', { a: 'secretless' }, 'ev-quiet-1');
    const rows = await rowsOf('ev-quiet-1');
    assert.deepEqual(
      rows.map((r) => r.event),
      ['received', 'completed'],
    );
    for (const r of rows) assert.equal(r.payload, null);
  });

  it('cuts payloads at log_payload_max_bytes at log_level payload_trimmed', async () => {
    const small = { a: 1 };
    await run('trimmed', small, 'ev-trim-small');
    const kept = await rowsOf('ev-trim-small');
    assert.deepEqual(JSON.parse(kept[0]!.payload!), small);
    assert.equal(kept[0]!.payload_truncated, 0);

    await run('trimmed', { pad: 'y'.repeat(500) }, 'ev-trim-big');
    const cut = await rowsOf('ev-trim-big');
    const received = cut[0]!;
    assert.equal(received.payload_truncated, 1);
    const text = JSON.parse(received.payload!) as unknown;
    assert.equal(typeof text, 'string', 'a cut payload is stored as a JSON string of the cut text');
    assert.ok(Buffer.byteLength(text as string) <= TRIM_BYTES, `${Buffer.byteLength(text as string)} bytes`);
    assert.ok((text as string).startsWith('{"pad":"yyy'));
  });

  it('masks the 25 global fields and log_extra_mask_fields at any depth', async () => {
    const secrets = Object.fromEntries(GLOBAL_MASK.map((n) => [n, `v-${n}`]));
    const body = {
      top: secrets,
      list: [{ deep: { nested: { ...secrets, internal_ref: 'ref-1', keep: 'visible' } } }],
      'Set-Cookie': 'c=1',
      PASSWORD: 'upper',
      internal_ref: { any: 'value' },
      plain: 'stays',
    };
    await run('masked', body, 'ev-mask-1');
    const rows = await rowsOf('ev-mask-1');
    const logged = JSON.parse(rows[0]!.payload!) as Record<string, unknown>;
    for (const n of GLOBAL_MASK) {
      assert.equal((logged.top as Record<string, unknown>)[n], '***', `top.${n}`);
      const deep = ((logged.list as Record<string, unknown>[])[0]!.deep as { nested: Record<string, unknown> }).nested;
      assert.equal(deep[n], '***', `list[0].deep.nested.${n}`);
      assert.equal(deep.internal_ref, '***');
      assert.equal(deep.keep, 'visible');
    }
    assert.equal(logged['Set-Cookie'], '***');
    assert.equal(logged.PASSWORD, '***');
    assert.equal(logged.internal_ref, '***');
    assert.equal(logged.plain, 'stays');
    for (const n of GLOBAL_MASK) assert.doesNotMatch(rows[0]!.payload!, new RegExp(`v-${n}\\b`));
    // The completed row carries the output (the same object): masked as well.
    assert.doesNotMatch(rows[1]!.payload!, /v-password/);
  });

  it('never records credential header values or the API key anywhere', async () => {
    await run('masked', { h: 1 }, 'ev-cred-1', {
      cookie: 'session=cookie-value-123',
      'proxy-authorization': 'Basic cHJveHktdmFsdWU=',
    });
    await rowsOf('ev-cred-1');
    const all = JSON.stringify(logRows(sandbox));
    for (const secret of [key, 'cookie-value-123', 'cHJveHktdmFsdWU='])
      assert.ok(!all.includes(secret), `${secret.slice(0, 8)} in log.db`);
  });

  it('records a connector event as a row, with worker_id and body_bytes only beside a message_id', async () => {
    const post = (body: unknown) =>
      fetch(`${server.url}/connector/events/acme/echo`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    assert.equal(
      (
        await post({
          event_type: 'connector_received',
          correlation_id: 'conn-1',
          message_id: 'm-9',
          worker_id: 4,
          body_bytes: 321,
        })
      ).status,
      202,
    );
    assert.equal(
      (await post({ event_type: 'connector_oversized', correlation_id: 'conn-2', worker_id: 4, body_bytes: 321 }))
        .status,
      202,
    );
    const [withId] = await waitForLogRows(sandbox, { correlation_id: 'conn-1' });
    assert.equal(withId?.event, 'connector_received');
    assert.equal(withId?.tenant, 'acme');
    assert.equal(withId?.flow, 'echo');
    assert.deepEqual(JSON.parse(withId!.payload!), { message_id: 'm-9', worker_id: 4, body_bytes: 321 });
    const [without] = await waitForLogRows(sandbox, { correlation_id: 'conn-2' });
    assert.equal(without?.event, 'connector_oversized');
    const payload =
      without?.payload === null || without?.payload === undefined
        ? {}
        : (JSON.parse(without.payload) as Record<string, unknown>);
    assert.equal(payload.worker_id, undefined);
    assert.equal(payload.body_bytes, undefined);
  });

  it('reads a connector event as JSON whatever its Content-Type says: missing, empty, unusual or malformed (202 or 400, never 415)', async () => {
    const body = '{"event_type":"connector_received","correlation_id":"conn-ct"}';
    for (const contentType of [undefined, '', 'text/plain', 'application/x-weird; charset=utf-8', 'not a media type']) {
      const head = `POST /connector/events/acme/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${contentType === undefined ? '' : `Content-Type: ${contentType}\r\n`}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
      const res = await rawRequest(server.port, head, { untilClose: true });
      assert.equal(res.status, 202, `${String(contentType)}: ${res.raw}`);
    }
    const bad = await rawRequest(
      server.port,
      `POST /connector/events/acme/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nnope!`,
      { untilClose: true },
    );
    assert.equal(bad.status, 400, bad.raw);
  });

  it('refuses a connector event nesting deeper than 128 levels with the 400 /run gives (128 accepted), and records nothing', async () => {
    const post = (body: string) =>
      fetch(`${server.url}/connector/events/acme/echo`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      });
    // The event object is the first level: a field nesting n more makes the body n + 1 deep.
    const event = (correlationId: string, extra: string) =>
      `{"event_type":"connector_received","correlation_id":"${correlationId}","extra":${extra}}`;
    const arrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const objects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const atLimit = await post(event('conn-deep-128', arrays(127)));
    assert.equal(atLimit.status, 202, await atLimit.text());
    await waitForLogRows(sandbox, { correlation_id: 'conn-deep-128' });
    const runAnswer = await run('masked', JSON.parse(arrays(129)) as unknown, 'deep-run');
    assert.equal(runAnswer.status, 400);
    const expected = await runAnswer.json();
    assert.deepEqual(expected, { ok: false, error: 'JSON body nests deeper than 128 levels' });
    const bodies = [
      event('conn-deep-129', arrays(128)),
      event('conn-deep-obj', objects(128)),
      event('conn-deep-10k', arrays(10_000)),
    ];
    for (const body of bodies) {
      assert.ok(Buffer.byteLength(body) < 64 * 1024, 'within the connector body limit');
      const res = await post(body);
      assert.equal(res.status, 400, body.slice(0, 80));
      assert.deepEqual(await res.json(), expected);
    }
    // Flush marker: rows are written in order.
    assert.equal((await post(event('conn-deep-after', '1'))).status, 202);
    await waitForLogRows(sandbox, { correlation_id: 'conn-deep-after' });
    for (const id of ['conn-deep-129', 'conn-deep-obj', 'conn-deep-10k'])
      assert.deepEqual(logRows(sandbox, { correlation_id: id }), [], `${id} recorded nothing`);
  });

  it('writes the same rows to logs/events-YYYY-MM-DD.jsonl (flushed on shutdown)', async () => {
    await run('masked', { file: true }, 'ev-file-1');
    assert.equal(await server.stop(), 0);
    const lines = jsonlEvents(sandbox).filter((e) => e.correlation_id === 'ev-file-1');
    assert.deepEqual(
      lines.map((e) => e.event),
      ['received', 'completed'],
    );
    assert.equal(lines[1]!.http_status, 200);
    assert.equal(lines[0]!.step ?? null, null);
    const masked = jsonlEvents(sandbox).find((e) => e.correlation_id === 'ev-mask-1' && e.event === 'received');
    assert.match(JSON.stringify(masked), /"password":"\*\*\*"/);
  });
});

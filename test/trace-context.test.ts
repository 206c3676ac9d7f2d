/**
 * W3C trace context through the real `svc serve`, with no OpenTelemetry SDK (the default): what
 * /run (JSON and SOAP), /enqueue (through the queue to the worker) and the gRPC door receive is
 * continued in every `http_egress` call a loopback backend records, and in the log rows'
 * `trace_id`; an invalid `traceparent` starts a new trace.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { greeterSet, testClient, type GreeterTestClient } from './helpers/grpc.js';
import { RECORDED_CALL_STEP, startHeaderBackend, type HeaderBackend } from './helpers/header-backend.js';
import { jsonlEvents, waitForLogRows, type LogRow } from './helpers/log-reads.js';
import { requestWithHeaders } from './helpers/raw-http.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const CALLER_SPAN = '00f067aa0ba902b7';
const TRACESTATE = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';
/** A traceparent from a caller, for a trace id of its own per test. */
const traceparentFor = (traceId: string, flags = '01') => `00-${traceId}-${CALLER_SPAN}-${flags}`;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

const RELAY = flow('acme', 'relay', 'effects: [http_egress]', RECORDED_CALL_STEP);
const QUEUED = flow('acme', 'queued', 'effects: [http_egress]\nqueue_initial_delay_ms: 50', RECORDED_CALL_STEP);
const GREET = flow(
  'acme',
  'greet',
  'effects: [http_egress]\ninbound: grpc\ngrpc_method: demo.v1.Greeter/SayHello',
  `${RECORDED_CALL_STEP}\n## Step: answer\n\`\`\`ntd\n{"message": "relayed"}\n\`\`\`\n`,
);

/** The backend's view of a call: the traceparent it was sent, split. */
function sentTraceparent(headers: IncomingHttpHeaders): { traceId: string; parentId: string; flags: string } {
  const m = TRACEPARENT.exec(String(headers.traceparent));
  assert.ok(m, `not a version 00 traceparent: ${String(headers.traceparent)}`);
  return { traceId: m[1]!, parentId: m[2]!, flags: m[3]! };
}

describe('W3C trace context without an OpenTelemetry SDK', () => {
  const sandbox = makeSandbox();
  let backend: HeaderBackend;
  let server: ServerProcess;
  let client: GreeterTestClient;
  let key = '';

  before(async () => {
    backend = await startHeaderBackend({ failFirstCall: (k) => k === 'tc-retry' });
    createTenant(sandbox, 'acme');
    const setPath = join(sandbox.home, 'greeter.pb');
    writeFileSync(setPath, greeterSet());
    const deployed = svc(sandbox, [
      'proto',
      'deploy',
      setPath,
      '--tenant',
      'acme',
      '--name',
      'greeter',
      '--version',
      '1',
      '--latest',
      '--db',
      sandbox.db,
    ]);
    assert.equal(deployed.code, 0, deployed.stderr);
    for (const text of [RELAY, QUEUED, GREET]) deployFlow(sandbox, text);
    key = createKey(sandbox, 'acme');
    server = await startServer(sandbox, ['--grpc-port', '0'], { BACKEND_URL: backend.url });
    const m = /grpc listening on (127\.0\.0\.1:\d+)/.exec(server.output());
    assert.ok(m, server.output());
    client = testClient(m[1]!, greeterSet());
  });

  after(async () => {
    client?.close();
    await server?.stop();
    await backend?.close();
    sandbox.cleanup();
  });

  const post = (path: string, correlationId: string, headers: Record<string, string>, body = '{"n": 1}') =>
    requestWithHeaders(`${server.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'x-correlation-id': correlationId,
        ...headers,
      },
      body,
    });

  /** Every log row of a correlation id once `count` are written, each with its trace id. */
  const rowsOf = async (correlationId: string, count: number): Promise<LogRow[]> =>
    waitForLogRows(sandbox, { correlation_id: correlationId }, count);

  it('the boot output says spans are not recorded but traceparent is propagated', () => {
    assert.match(server.output(), /traces: {5}W3C traceparent propagated; no OpenTelemetry SDK registered/);
  });

  it("/run continues the caller's trace: the backend gets a child traceparent and the tracestate, the log rows the trace id", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await post('/flows/acme/relay/run', 'tc-run', {
      traceparent: traceparentFor(traceId),
      tracestate: TRACESTATE,
    });
    assert.equal(r.status, 200, r.body);
    const [call] = await backend.waitForCalls('tc-run');
    const sent = sentTraceparent(call!);
    assert.equal(sent.traceId, traceId);
    assert.equal(sent.flags, '01', "the caller's sampled flag is kept");
    assert.notEqual(sent.parentId, CALLER_SPAN, "the backend's parent is the service's span, not the caller's");
    assert.equal(call!.tracestate, TRACESTATE);
    const rows = await rowsOf('tc-run', 2);
    assert.deepEqual(
      rows.map((row) => [row.event, row.trace_id]),
      [
        ['received', traceId],
        ['completed', traceId],
      ],
    );
    const lines = await waitFor('the JSON Lines copies', () => {
      const found = jsonlEvents(sandbox).filter((e) => e.correlation_id === 'tc-run');
      return found.length >= 2 && found;
    });
    assert.ok(lines.every((l) => l.trace_id === traceId));
  });

  it('an invalid traceparent is ignored: a new trace in the backend call and the log, and its tracestate is dropped', async () => {
    const given = '4BF92F3577B34DA6A3CE929D0E0E4736';
    const r = await post('/flows/acme/relay/run', 'tc-invalid', {
      traceparent: traceparentFor(given),
      tracestate: TRACESTATE,
    });
    assert.equal(r.status, 200, r.body);
    const [call] = await backend.waitForCalls('tc-invalid');
    const sent = sentTraceparent(call!);
    assert.notEqual(sent.traceId, given.toLowerCase());
    assert.equal(sent.flags, '00', 'a trace the service started and nobody records is not sampled');
    assert.equal(call!.tracestate, undefined);
    const rows = await rowsOf('tc-invalid', 2);
    assert.ok(
      rows.every((row) => row.trace_id === sent.traceId),
      JSON.stringify(rows),
    );
  });

  it('without a traceparent each request starts a trace of its own, recorded and sent', async () => {
    await post('/flows/acme/relay/run', 'tc-none-1', {});
    await post('/flows/acme/relay/run', 'tc-none-2', {});
    const [a] = await backend.waitForCalls('tc-none-1');
    const [b] = await backend.waitForCalls('tc-none-2');
    assert.notEqual(sentTraceparent(a!).traceId, sentTraceparent(b!).traceId);
    const rows = await rowsOf('tc-none-1', 2);
    assert.ok(rows.every((row) => row.trace_id === sentTraceparent(a!).traceId));
  });

  it("a SOAP request on /run continues the caller's trace", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const envelope =
      '<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><Ping><v>1</v></Ping></s:Body></s:Envelope>';
    const r = await post(
      '/flows/acme/relay/run',
      'tc-soap',
      { 'content-type': 'text/xml; charset=utf-8', soapaction: '"urn:ping"', traceparent: traceparentFor(traceId) },
      envelope,
    );
    assert.equal(r.status, 200, r.body);
    const [call] = await backend.waitForCalls('tc-soap');
    assert.equal(sentTraceparent(call!).traceId, traceId);
    const rows = await rowsOf('tc-soap', 2);
    assert.ok(rows.every((row) => row.trace_id === traceId));
  });

  it("/enqueue stores the trace context with the message: the worker's egress call and every row of the message are in the caller's trace", async () => {
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const r = await post('/flows/acme/queued/enqueue', 'tc-queue', {
      traceparent: traceparentFor(traceId),
      tracestate: TRACESTATE,
    });
    assert.equal(r.status, 202, r.body);
    const [call] = await backend.waitForCalls('tc-queue');
    const sent = sentTraceparent(call!);
    assert.equal(sent.traceId, traceId);
    assert.notEqual(sent.parentId, CALLER_SPAN);
    assert.equal(call!.tracestate, TRACESTATE);
    const rows = await rowsOf('tc-queue', 2);
    assert.deepEqual(
      rows.map((row) => [row.event, row.trace_id]),
      [
        ['queue_enqueued', traceId],
        ['queue_processed', traceId],
      ],
    );
    // The message as the file queue stores it. On --store the row is deleted once acknowledged: the
    // worker's call above carried the stored context, and the queue conformance suite checks the
    // traceparent and tracestate columns round-trip (test/conformance/queue/queue.conformance.ts).
    if (!ON_PG_STORE) {
      const segment = readFileSync(join(statePaths(sandbox.db).queuesDir, 'acme', 'queued', 'segment.log'), 'latin1');
      assert.match(segment, new RegExp(`"traceparent":"00-${traceId}-[0-9a-f]{16}-01","tracestate":"${TRACESTATE}"`));
    }
  });

  it('a queued message keeps its trace across a retry', async () => {
    const traceId = 'ffeeddccbbaa99887766554433221100';
    const r = await post('/flows/acme/queued/enqueue', 'tc-retry', { traceparent: traceparentFor(traceId) });
    assert.equal(r.status, 202, r.body);
    const calls = await backend.waitForCalls('tc-retry', 2);
    assert.deepEqual(
      calls.map((c) => sentTraceparent(c).traceId),
      [traceId, traceId],
    );
    const failed = await waitForLogRows(sandbox, { event: 'queue_failed', trace_id: traceId });
    assert.equal(failed[0]!.outcome, 'retry');
    await waitForLogRows(sandbox, { event: 'queue_processed', correlation_id: 'tc-retry' });
  });

  it('/enqueue without a traceparent starts the trace there: the worker continues it', async () => {
    const r = await post('/flows/acme/queued/enqueue', 'tc-queue-new', {});
    assert.equal(r.status, 202, r.body);
    const [call] = await backend.waitForCalls('tc-queue-new');
    const rows = await rowsOf('tc-queue-new', 2);
    assert.ok(
      rows.every((row) => row.trace_id === sentTraceparent(call!).traceId),
      JSON.stringify(rows),
    );
  });

  it('gRPC traceparent metadata is continued like the HTTP header', async () => {
    const traceId = '11112222333344445555666677778888';
    const reply = await client.unary(
      'demo.v1.Greeter/SayHello',
      { user_name: 'ada' },
      {
        authorization: `Bearer ${key}`,
        'x-correlation-id': 'tc-grpc',
        traceparent: traceparentFor(traceId),
        tracestate: TRACESTATE,
      },
    );
    assert.equal(reply.message, 'relayed');
    const [call] = await backend.waitForCalls('tc-grpc');
    const sent = sentTraceparent(call!);
    assert.equal(sent.traceId, traceId);
    assert.notEqual(sent.parentId, CALLER_SPAN);
    assert.equal(call!.tracestate, TRACESTATE);
    const rows = await rowsOf('tc-grpc', 2);
    assert.ok(
      rows.every((row) => row.trace_id === traceId),
      JSON.stringify(rows),
    );
  });

  it('invalid gRPC traceparent metadata starts a new trace', async () => {
    await client.unary(
      'demo.v1.Greeter/SayHello',
      { user_name: 'bo' },
      {
        authorization: `Bearer ${key}`,
        'x-correlation-id': 'tc-grpc-bad',
        traceparent: 'ff-11112222333344445555666677778888-00f067aa0ba902b7-01',
      },
    );
    const [call] = await backend.waitForCalls('tc-grpc-bad');
    assert.notEqual(sentTraceparent(call!).traceId, '11112222333344445555666677778888');
  });
});

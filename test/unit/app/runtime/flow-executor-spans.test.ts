/**
 * The executor's spans with an OpenTelemetry SDK registered (an in-memory provider): one per
 * execution, per step and per egress call, their attributes and parents, and the `traceparent` a
 * loopback backend receives.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { RecordingTracerProvider, type RecordedSpan } from '../../../helpers/recording-tracer.js';
import { ExecutionLimiter, type LoadedFlow } from '../../../../src/engine/index.js';
import { compileFlow } from '../../../../src/flow/compile.js';
import type { LogEventInput } from '../../../../src/store/event-log/event-log-row.js';
import { httpEgressEffect } from '../../../../src/app/runtime/effects.js';
import { FlowExecutor } from '../../../../src/app/runtime/flow-executor.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = '00f067aa0ba902b7';

function loaded(body: string): LoadedFlow {
  const src = [
    '---',
    'flowdoc_version: "0.1"',
    'flow: orders',
    'tenant: acme',
    'effects: [http_egress]',
    '---',
    body,
  ].join('\n');
  const r = compileFlow(src);
  assert.ok(r.ir, JSON.stringify(r.diagnostics));
  return { ir: r.ir, version: '3', hash: r.hash!, created_at: '2024-01-01T00:00:00Z' };
}

const flowCalling = (path: string) =>
  loaded(
    `## Step: check\n\`\`\`validate\nhas(ctx.input.n) | n is required | syntactic\n\`\`\`\n\n## Step: call\neffects: [http_egress]\nendpoint: \${SPANS_BACKEND}${path}\n`,
  );

describe('spans of an execution, with an SDK registered', () => {
  const provider = new RecordingTracerProvider();
  const received: IncomingHttpHeaders[] = [];
  const rows: LogEventInput[] = [];
  let server: Server;
  let executor: FlowExecutor;
  let egress: ReturnType<typeof httpEgressEffect>;

  before(async () => {
    assert.ok(provider.register());
    server = createServer((req, res) => {
      received.push(req.headers);
      req.resume();
      const status = req.url === '/down' ? 503 : 200;
      req.on('end', () => res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    process.env.SPANS_BACKEND = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    egress = httpEgressEffect(() => 1_048_576);
    const events = { emit: (e: LogEventInput) => void rows.push(e) };
    executor = new FlowExecutor({
      loadFlow: () => undefined,
      setting: () => 1_048_576,
      limiter: new ExecutionLimiter(4),
      events,
      traceEnabled: () => false,
      maxDurationSecs: 60,
      engine: { events, effects: { http_egress: egress.handler } },
    });
  });

  after(async () => {
    RecordingTracerProvider.unregister();
    await egress.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const spansOf = (traceId: string): RecordedSpan[] => provider.spans.filter((s) => s.traceId === traceId);

  it('execution, step and egress spans nest under the caller, with flow, tenant, step and status', async () => {
    await executor.run(
      flowCalling('/ok'),
      { n: 1 },
      {
        door: 'http',
        correlationId: 'c-1',
        headers: {},
        traceContext: { traceparent: `00-${TRACE}-${CALLER}-01`, tracestate: 'rojo=1' },
      },
    );
    const [exec, check, call, post] = spansOf(TRACE);
    assert.equal(spansOf(TRACE).length, 4);
    assert.deepEqual(
      [exec!.name, exec!.kind, exec!.parentSpanId, exec!.parentIsRemote, exec!.status.code],
      ['flow acme/orders', 'SERVER', CALLER, true, 'OK'],
    );
    assert.deepEqual(exec!.attributes, {
      'svc.tenant': 'acme',
      'svc.flow': 'orders',
      'svc.flow.version': '3',
      'svc.door': 'http',
      'svc.correlation_id': 'c-1',
      'svc.outcome': 'succeeded',
      'http.response.status_code': 200,
    });
    assert.deepEqual([check!.name, check!.kind, check!.parentSpanId], ['step check', 'INTERNAL', exec!.spanId]);
    assert.deepEqual(check!.attributes, {
      'svc.tenant': 'acme',
      'svc.flow': 'orders',
      'svc.step': 'check',
      'svc.outcome': 'ok',
    });
    assert.deepEqual([call!.name, call!.parentSpanId], ['step call', exec!.spanId]);
    assert.deepEqual(
      [post!.name, post!.kind, post!.parentSpanId, post!.status.code],
      ['POST', 'CLIENT', call!.spanId, 'OK'],
    );
    const port = Number(new URL(process.env.SPANS_BACKEND!).port);
    assert.deepEqual(post!.attributes, {
      'svc.tenant': 'acme',
      'svc.flow': 'orders',
      'svc.step': 'call',
      'http.request.method': 'POST',
      'url.full': `${process.env.SPANS_BACKEND}/ok`,
      'server.address': '127.0.0.1',
      'server.port': port,
      'http.response.status_code': 200,
    });
    // The backend's parent is the egress span; the caller's trace state travels on.
    const headers = received.at(-1)!;
    assert.equal(headers.traceparent, `00-${TRACE}-${post!.spanId}-01`);
    assert.equal(headers.tracestate, 'rojo=1');
    assert.ok(provider.spans.every((s) => s.ended));
    assert.deepEqual(
      rows.filter((r) => r.correlation_id === 'c-1').map((r) => [r.event, r.trace_id]),
      [
        ['received', TRACE],
        ['completed', TRACE],
      ],
    );
  });

  it('a failed call marks the egress, step and execution spans as errors', async () => {
    const before = provider.spans.length;
    await assert.rejects(
      executor.run(flowCalling('/down'), { n: 1 }, { door: 'queue', correlationId: 'c-2', headers: {} }),
    );
    const [exec, , call, post] = provider.spans.slice(before);
    assert.deepEqual(
      [
        exec!.kind,
        exec!.parentSpanId,
        exec!.status.code,
        exec!.attributes['svc.outcome'],
        exec!.attributes['http.response.status_code'],
      ],
      ['CONSUMER', undefined, 'ERROR', 'failed', 502],
    );
    assert.deepEqual([call!.status.code, call!.attributes['svc.outcome']], ['ERROR', 'failed']);
    assert.deepEqual(
      [post!.status.code, post!.attributes['http.response.status_code'], post!.attributes['error.type']],
      ['ERROR', 503, 'SVC_ERR_EGRESS_FAILED'],
    );
    assert.match(post!.status.message ?? '', /backend answered HTTP 503/);
    assert.equal(received.at(-1)!.traceparent, `00-${exec!.traceId}-${post!.spanId}-01`);
  });

  it('a false condition ends its step span as stopped', async () => {
    const before = provider.spans.length;
    const gated = loaded('## Step: gate\n```condition\nctx.input.n > 5\n```\n```ntd\n{"n": 1}\n```\n');
    await executor.run(gated, { n: 1 }, { door: 'cron', correlationId: 'c-3', headers: {} });
    const [exec, gate] = provider.spans.slice(before);
    assert.deepEqual([exec!.kind, exec!.attributes['svc.outcome']], ['INTERNAL', 'succeeded']);
    assert.deepEqual([gate!.name, gate!.attributes['svc.outcome'], gate!.status.code], ['step gate', 'stopped', 'OK']);
  });
});

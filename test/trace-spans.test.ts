/**
 * Spans through the real `svc serve` with an OpenTelemetry tracer provider preloaded by
 * `--import` (as docs/observability.md tells operators to plug in an SDK): an in-memory provider
 * that writes each ended span to a file. The execution, step and egress spans nest under the
 * caller's, the backend's `traceparent` names the egress span, and a queued message's execution
 * is a child of its submission's span.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { RECORDED_CALL_STEP, startHeaderBackend, type HeaderBackend } from './helpers/header-backend.js';
import { requestWithHeaders } from './helpers/raw-http.js';
import type { RecordedSpan } from './helpers/recording-tracer.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const PRELOAD = pathToFileURL(resolve(dirname(fileURLToPath(import.meta.url)), 'helpers/otel-preload.js')).href;
const CALLER_SPAN = '00f067aa0ba902b7';

const RELAY = flow(
  'acme',
  'relay',
  'effects: [http_egress]',
  `## Step: check\n\`\`\`validate\nhas(ctx.input.n) | n is required | syntactic\n\`\`\`\n\n${RECORDED_CALL_STEP}`,
);
const QUEUED = flow('acme', 'queued', 'effects: [http_egress]', RECORDED_CALL_STEP);

describe('spans with an OpenTelemetry SDK preloaded into svc serve', () => {
  const sandbox = makeSandbox();
  const spansFile = join(sandbox.home, 'spans.jsonl');
  let backend: HeaderBackend;
  let server: ServerProcess;
  let key = '';

  before(async () => {
    backend = await startHeaderBackend();
    createTenant(sandbox, 'acme');
    deployFlow(sandbox, RELAY);
    deployFlow(sandbox, QUEUED);
    key = createKey(sandbox, 'acme');
    server = await startServer(sandbox, [], {
      BACKEND_URL: backend.url,
      NODE_OPTIONS: `--import=${PRELOAD}`,
      SVC_TEST_SPANS_FILE: spansFile,
    });
  });

  after(async () => {
    await server?.stop();
    await backend?.close();
    sandbox.cleanup();
  });

  const post = (path: string, correlationId: string, traceparent: string) =>
    requestWithHeaders(`${server.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'x-correlation-id': correlationId,
        traceparent,
      },
      body: '{"n": 1}',
    });

  const spansOf = (traceId: string): RecordedSpan[] => {
    let text = '';
    try {
      text = readFileSync(spansFile, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as RecordedSpan)
      .filter((s) => s.traceId === traceId);
  };
  const waitForSpans = (traceId: string, count: number) =>
    waitFor(`${count} span(s) of trace ${traceId}`, () => spansOf(traceId).length >= count && spansOf(traceId));
  const byName = (spans: RecordedSpan[], name: string): RecordedSpan => {
    const found = spans.find((s) => s.name === name);
    assert.ok(found, `no span '${name}' among ${spans.map((s) => s.name).join(', ')}`);
    return found;
  };

  it('the boot output says an SDK is registered', () => {
    assert.match(server.output(), /traces: {5}OpenTelemetry SDK registered/);
  });

  it("/run: execution, step and egress spans nest under the caller, and the backend's parent is the egress span", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await post('/flows/acme/relay/run', 'sp-run', `00-${traceId}-${CALLER_SPAN}-01`);
    assert.equal(r.status, 200, r.body);
    const spans = await waitForSpans(traceId, 4);
    const exec = byName(spans, 'flow acme/relay');
    const check = byName(spans, 'step check');
    const call = byName(spans, 'step call');
    const post_ = byName(spans, 'POST');
    assert.deepEqual(
      [exec.kind, exec.parentSpanId, exec.scope, exec.status.code],
      ['SERVER', CALLER_SPAN, 'svc', 'OK'],
    );
    assert.deepEqual(
      [
        exec.attributes['svc.tenant'],
        exec.attributes['svc.flow'],
        exec.attributes['svc.door'],
        exec.attributes['svc.outcome'],
        exec.attributes['http.response.status_code'],
      ],
      ['acme', 'relay', 'http', 'succeeded', 200],
    );
    assert.deepEqual([check.parentSpanId, call.parentSpanId], [exec.spanId, exec.spanId]);
    assert.deepEqual([call.attributes['svc.step'], call.attributes['svc.outcome']], ['call', 'ok']);
    assert.deepEqual(
      [post_.kind, post_.parentSpanId, post_.attributes['http.response.status_code'], post_.attributes['svc.step']],
      ['CLIENT', call.spanId, 200, 'call'],
    );
    const [sent] = await backend.waitForCalls('sp-run');
    assert.equal(sent!.traceparent, `00-${traceId}-${post_.spanId}-01`);
  });

  it("/enqueue: the submission is a producer span under the caller, and the worker's execution its consumer child", async () => {
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const r = await post('/flows/acme/queued/enqueue', 'sp-queue', `00-${traceId}-${CALLER_SPAN}-01`);
    assert.equal(r.status, 202, r.body);
    const spans = await waitForSpans(traceId, 4);
    const enqueue = byName(spans, 'enqueue acme/queued');
    const exec = byName(spans, 'flow acme/queued');
    const call = byName(spans, 'step call');
    const post_ = byName(spans, 'POST');
    assert.deepEqual(
      [enqueue.kind, enqueue.parentSpanId, enqueue.attributes['svc.correlation_id']],
      ['PRODUCER', CALLER_SPAN, 'sp-queue'],
    );
    assert.deepEqual(
      [exec.kind, exec.parentSpanId, exec.parentIsRemote, exec.attributes['svc.door']],
      ['CONSUMER', enqueue.spanId, true, 'queue'],
    );
    assert.deepEqual([call.parentSpanId, post_.parentSpanId], [exec.spanId, call.spanId]);
    const [sent] = await backend.waitForCalls('sp-queue');
    assert.equal(sent!.traceparent, `00-${traceId}-${post_.spanId}-01`);
  });
});

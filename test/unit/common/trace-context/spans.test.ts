import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { RecordingTracerProvider } from '../../../helpers/recording-tracer.js';
import { sdkRegistered, startTrace, TRACER_NAME } from '../../../../src/common/trace-context/spans.js';
import { parseTraceparent } from '../../../../src/common/trace-context/traceparent.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = '00f067aa0ba902b7';
const INCOMING = { traceparent: `00-${TRACE}-${CALLER}-01`, tracestate: 'rojo=00f067aa0ba902b7' };

// No SDK first: the global provider is registered only by the second suite (one process per file).
describe('without an OpenTelemetry SDK', () => {
  it('a valid traceparent is continued: same trace id and flags, a span id of its own, tracestate passed on', () => {
    assert.equal(sdkRegistered(), false);
    const span = startTrace('flow t/f', 'server', INCOMING, { 'svc.tenant': 't' });
    assert.equal(span.sdk, false);
    assert.equal(span.traceId, TRACE);
    assert.equal(span.tracestate, INCOMING.tracestate);
    const out = parseTraceparent(span.child('POST', 'client', {}).traceparent());
    assert.equal(out?.traceId, TRACE);
    assert.equal(out?.flags, 1);
    assert.notEqual(out?.spanId, CALLER);
  });

  it('an invalid or absent traceparent starts a new trace, unsampled, and its tracestate is dropped', () => {
    for (const incoming of [
      { traceparent: `00-${TRACE.toUpperCase()}-${CALLER}-01`, tracestate: 'rojo=1' },
      undefined,
    ]) {
      const span = startTrace('flow t/f', 'server', incoming, {});
      assert.match(span.traceId, /^[0-9a-f]{32}$/);
      assert.notEqual(span.traceId, TRACE);
      assert.equal(span.tracestate, undefined);
      assert.equal(parseTraceparent(span.traceparent())?.flags, 0);
    }
  });

  it('each outgoing call gets its own span id; a span keeps one', () => {
    const span = startTrace('flow t/f', 'server', INCOMING, {});
    const a = span.child('POST', 'client', {});
    const b = span.child('POST', 'client', {});
    assert.notEqual(parseTraceparent(a.traceparent())?.spanId, parseTraceparent(b.traceparent())?.spanId);
    assert.equal(a.traceparent(), a.traceparent());
  });
});

describe('with an OpenTelemetry SDK registered (an in-memory provider)', () => {
  const provider = new RecordingTracerProvider();
  after(() => RecordingTracerProvider.unregister());

  it('spans are recorded under the caller: kinds, attributes, parents, status', () => {
    assert.ok(provider.register());
    assert.equal(sdkRegistered(), true);
    const exec = startTrace('flow t/f', 'server', INCOMING, { 'svc.tenant': 't', 'svc.flow': 'f', absent: undefined });
    assert.equal(exec.sdk, true);
    const step = exec.child('step s', 'internal', { 'svc.step': 's' });
    const call = step.child('POST', 'client', {});
    call.setAttribute('http.response.status_code', 503);
    call.end(Object.assign(new Error('backend answered HTTP 503'), { code: 'SVC_ERR_EGRESS' }));
    step.end(new Error('failed'));
    exec.end();
    exec.end(new Error('a second end changes nothing'));

    const [e, s, c] = provider.spans;
    assert.equal(provider.spans.length, 3);
    assert.deepEqual(
      [e!.name, e!.kind, e!.scope, e!.traceId, e!.parentSpanId, e!.parentIsRemote],
      ['flow t/f', 'SERVER', TRACER_NAME, TRACE, CALLER, true],
    );
    assert.deepEqual(e!.attributes, { 'svc.tenant': 't', 'svc.flow': 'f' });
    assert.deepEqual(e!.status, { code: 'OK' });
    assert.equal(e!.traceState, INCOMING.tracestate);
    assert.deepEqual([s!.kind, s!.parentSpanId, s!.traceId], ['INTERNAL', e!.spanId, TRACE]);
    assert.deepEqual([c!.kind, c!.parentSpanId], ['CLIENT', s!.spanId]);
    assert.deepEqual(c!.attributes, { 'http.response.status_code': 503, 'error.type': 'SVC_ERR_EGRESS' });
    assert.deepEqual(c!.status, { code: 'ERROR', message: 'backend answered HTTP 503' });
    // What the backend is sent names the SDK's span for the call, with the caller's trace state.
    assert.equal(call.traceparent(), `00-${TRACE}-${c!.spanId}-01`);
    assert.equal(call.tracestate, INCOMING.tracestate);
  });

  it('an invalid traceparent gives a root span of a new trace', () => {
    const before = provider.spans.length;
    const span = startTrace('flow t/f', 'server', { traceparent: 'garbage' }, {});
    const recorded = provider.spans[before]!;
    assert.equal(recorded.parentSpanId, undefined);
    assert.equal(span.traceId, recorded.traceId);
    assert.notEqual(span.traceId, TRACE);
  });
});

describe('with an SDK that throws', () => {
  it('a delivery still gets its trace: the span falls back to ids only', () => {
    RecordingTracerProvider.unregister();
    const broken = new RecordingTracerProvider();
    broken.getTracer = () => ({
      startSpan: () => {
        throw new Error('SDK defect');
      },
      startActiveSpan: () => {
        throw new Error('SDK defect');
      },
    });
    assert.ok(broken.register());
    try {
      const span = startTrace('flow t/f', 'server', INCOMING, {});
      assert.equal(span.sdk, false);
      assert.equal(span.traceId, TRACE);
      assert.equal(parseTraceparent(span.child('POST', 'client', {}).traceparent())?.traceId, TRACE);
    } finally {
      RecordingTracerProvider.unregister();
    }
  });
});

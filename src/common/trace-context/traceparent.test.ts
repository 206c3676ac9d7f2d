import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newSpanId, newTraceId } from './trace-ids.js';
import { formatTraceparent, parseTraceparent, parseTracestate } from './traceparent.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('a version 00 traceparent gives its trace id, parent id and sampled flag', () => {
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`), { traceId: TRACE, spanId: SPAN, flags: 1 });
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-00`), { traceId: TRACE, spanId: SPAN, flags: 0 });
  // Flags Level 1 does not define are dropped (they must be zero when propagated).
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-03`), { traceId: TRACE, spanId: SPAN, flags: 1 });
});

test('a later version is read by its first four fields when what follows starts with a dash', () => {
  assert.deepEqual(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-adds`), {
    traceId: TRACE,
    spanId: SPAN,
    flags: 1,
  });
  assert.deepEqual(parseTraceparent(`01-${TRACE}-${SPAN}-00`), { traceId: TRACE, spanId: SPAN, flags: 0 });
});

const INVALID: readonly [string, string | undefined][] = [
  ['absent', undefined],
  ['empty', ''],
  ['version ff', `ff-${TRACE}-${SPAN}-01`],
  ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
  ['a later version followed by no dash', `cc-${TRACE}-${SPAN}-01x`],
  ['upper-case trace id', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
  ['upper-case version', `0A-${TRACE}-${SPAN}-01`],
  ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
  ['all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
  ['short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
  ['non-hex parent id', `00-${TRACE}-${SPAN.slice(0, 15)}g-01`],
  ['non-hex flags', `00-${TRACE}-${SPAN}-0x`],
  ['wrong separator', `00_${TRACE}-${SPAN}-01`],
  ['two headers joined', `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
  ['padded', ` 00-${TRACE}-${SPAN}-01`],
];

test('an invalid traceparent is refused (the caller then starts a new trace)', () => {
  for (const [what, value] of INVALID) assert.equal(parseTraceparent(value), undefined, what);
});

test('a traceparent is written in version 00 with only the sampled flag, and reads back', () => {
  assert.equal(formatTraceparent(TRACE, SPAN, 1), `00-${TRACE}-${SPAN}-01`);
  assert.equal(formatTraceparent(TRACE, SPAN, 0), `00-${TRACE}-${SPAN}-00`);
  assert.deepEqual(parseTraceparent(formatTraceparent(TRACE, SPAN, 1)), { traceId: TRACE, spanId: SPAN, flags: 1 });
});

test('tracestate: valid lists are kept (empty members and spaces dropped), invalid ones dropped whole', () => {
  assert.equal(parseTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'), 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
  assert.equal(parseTracestate(' rojo=1 , ,congo=2 '), 'rojo=1,congo=2');
  assert.equal(parseTracestate('fw529a3039@dt=ZGVmYXVsdA'), 'fw529a3039@dt=ZGVmYXVsdA');
  assert.equal(parseTracestate(undefined), undefined);
  assert.equal(parseTracestate(' , '), undefined);
  assert.equal(parseTracestate('Rojo=1'), undefined, 'upper-case key');
  assert.equal(parseTracestate('rojo'), undefined, 'no value');
  assert.equal(parseTracestate('rojo=a=b'), undefined, '= in the value');
  assert.equal(parseTracestate('rojo=1,rojo=2'), undefined, 'repeated key');
  assert.equal(parseTracestate('rojo=1 2 '), 'rojo=1 2', 'a trailing space is optional whitespace');
  const members = Array.from({ length: 33 }, (_, i) => `k${i}=v`);
  assert.equal(parseTracestate(members.slice(0, 32).join(',')), members.slice(0, 32).join(','));
  assert.equal(parseTracestate(members.join(',')), undefined, 'more than 32 members');
});

test('made-up ids are lowercase hex of the right length, valid, and do not repeat', () => {
  const traces = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const t = newTraceId();
    const s = newSpanId();
    assert.match(t, /^[0-9a-f]{32}$/);
    assert.match(s, /^[0-9a-f]{16}$/);
    assert.notEqual(parseTraceparent(formatTraceparent(t, s, 0)), undefined);
    traces.add(t);
  }
  assert.equal(traces.size, 2000);
});

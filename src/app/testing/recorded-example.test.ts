import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import type { StoredEvent } from '../../store/contracts/index.js';
import { exampleFromDelivery, NotRecordedError } from './recorded-example.js';

let id = 0;
const row = (over: Partial<StoredEvent>): StoredEvent =>
  ({
    id: ++id,
    ts: '2026-05-01T12:00:00Z',
    tenant: 'acme',
    flow: 'orders',
    correlation_id: 'c-1',
    step: null,
    event: 'step_traced',
    http_status: null,
    reason: null,
    payload: null,
    payload_truncated: false,
    ...over,
  }) as StoredEvent;

/** The YAML block of a recorded example, read back. */
const specOf = (text: string): Record<string, unknown> =>
  parse(/```yaml\n([^]*?)```/.exec(text)![1]!) as Record<string, unknown>;

test('a queued delivery retried after a timeout: the door, both answers in call order, the attempts, the output', () => {
  const text = exampleFromDelivery({
    tenant: 'acme',
    flow: 'orders',
    correlationId: 'c-1',
    traceRows: [
      row({ step: 'enqueued', payload: { id: 1 } }),
      row({ step: 'dequeued', payload: { id: 1 } }),
      row({ event: 'egress_traced', step: 'ship', reason: 'backend did not answer within the 2000 ms read timeout' }),
      row({ step: 'dequeued', payload: { id: 1 } }),
      row({ event: 'egress_traced', step: 'ship', http_status: 200, payload: { headers: {}, body: { ok: true } } }),
      row({ flow: 'notify', step: 'call_flow', payload: { ok: true } }),
      row({ flow: 'notify', step: 'send', payload: 'sent' }),
      row({ step: 'answer', payload: { shipped: 1 } }),
    ],
    logRows: [row({ event: 'queue_processed', http_status: 200 })],
  });
  assert.deepEqual(specOf(text), {
    door: 'enqueue',
    input: { id: 1 },
    correlation_id: 'c-1',
    now: '2026-05-01T12:00:00Z',
    stubs: { ship: ['timeout', { status: 200, body: { ok: true } }] },
    expect: { status: 200, attempts: 2, body: { shipped: 1 } },
  });
});

test('masked values and an unrecorded XML value are listed under masked:, by the path the spec gives them', () => {
  const text = exampleFromDelivery({
    tenant: 'acme',
    flow: 'orders',
    correlationId: 'c-1',
    traceRows: [
      row({ step: 'received', payload: { card_number: '***', lines: [{ pin: '***' }] } }),
      row({
        event: 'egress_traced',
        step: 'quote',
        http_status: 200,
        payload: { headers: {}, body: { _unrepresentable: 'Quote' } },
      }),
    ],
    logRows: [row({ event: 'completed', http_status: 200 })],
  });
  assert.deepEqual(specOf(text).masked, ['input.card_number', 'input.lines[0].pin', 'stubs.quote.body', 'expect.body']);
  assert.match(text, /fill them in, then remove `masked:`/);
});

test('a delivery that was not traced gives no example, and says why', () => {
  assert.throws(
    () => exampleFromDelivery({ tenant: 'acme', flow: 'orders', correlationId: 'c-9', traceRows: [], logRows: [] }),
    (err: unknown) => err instanceof NotRecordedError && /was not traced/.test(err.message),
  );
});

/**
 * Replay's core (issue 38, first part): a recorded delivery against a candidate flow, its call outs
 * answered from the recording: the same file is the same; a changed answer differs at its paths
 * (never its values); a new call out, a masked value or a delivery without its entry row is not
 * replayable, and says why; an ignored path does not count.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { replayDelivery } from '../src/app/testing/replay.js';
import type { RecordedDelivery } from '../src/app/testing/recorded-example.js';
import { compileFlow } from '../src/flow/compile.js';
import type { LoadedFlow } from '../src/engine/index.js';
import { EXAMPLE_DOORS } from '../src/serve/example-doors.js';
import { openScratchFlowState } from '../src/storage/index.js';
import type { StoredEvent } from '../src/store/contracts/index.js';

const flowText = (answer: string, extraStep = '') => `---
flowdoc_version: "0.1"
flow: quote
tenant: acme
effects: [http_egress]
---

## Step: price
endpoint: https://pricing.example.com/price/{{ ctx.input.id }}
method: GET
${extraStep}
## Step: answer
\`\`\`ntd
${answer}
\`\`\`
`;
const ORIGINAL = flowText('{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}}');

function loaded(text: string): LoadedFlow {
  const r = compileFlow(text);
  assert.ok(r.ir, JSON.stringify(r.diagnostics));
  return { ir: r.ir, version: 'candidate', hash: r.hash!, created_at: new Date(0).toISOString() };
}

let id = 0;
const row = (over: Partial<StoredEvent>): StoredEvent =>
  ({
    id: ++id,
    ts: '2026-05-01T12:00:00Z',
    tenant: 'acme',
    flow: 'quote',
    correlation_id: 'd-1',
    step: null,
    event: 'step_traced',
    http_status: null,
    reason: null,
    payload: null,
    payload_truncated: false,
    ...over,
  }) as StoredEvent;

/** A /run delivery of quote as the trace keeps it: entry, the price call's exchange, the answer. */
const recorded = (input: Record<string, unknown> = { id: '7' }): RecordedDelivery => ({
  tenant: 'acme',
  flow: 'quote',
  correlationId: 'd-1',
  traceRows: [
    row({ step: 'received', payload: input }),
    row({
      event: 'egress_traced',
      step: 'price',
      http_status: 200,
      payload: { headers: { 'content-type': 'application/json' }, body: { id: '7', price: 12.5 } },
    }),
    row({ step: 'answer', payload: { id: '7', price: 12.5 } }),
  ],
  logRows: [row({ event: 'completed', http_status: 200 })],
});

const replay = (candidate: string, d: RecordedDelivery = recorded(), ignore: string[] = []) => {
  const flow = loaded(candidate);
  return replayDelivery(
    flow,
    d,
    { flows: new Map([['acme/quote', flow]]), doors: EXAMPLE_DOORS, flowState: openScratchFlowState },
    { ignore },
  );
};

describe('replay of a recorded delivery against a candidate', () => {
  it('finds the same file the same', async () => {
    assert.deepEqual((await replay(ORIGINAL)).verdict, { kind: 'same' });
  });

  it('finds a changed answer different at its paths, naming no value', async () => {
    const r = await replay(flowText('{"id": "{{ ctx.input.id }}", "total": {{ ctx.input.price }}}'));
    assert.deepEqual(r.verdict, { kind: 'differs', paths: ['body.price', 'body.total'] });
    assert.doesNotMatch(JSON.stringify(r), /12\.5/);
  });

  it('does not count an ignored path', async () => {
    const candidate = flowText('{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}, "at": "{{ now() }}"}');
    assert.deepEqual((await replay(candidate)).verdict.kind, 'differs');
    assert.deepEqual((await replay(candidate, recorded(), ['body.at'])).verdict, { kind: 'same' });
  });

  it('calls a delivery not replayable where the candidate calls out beyond the recording, naming the step', async () => {
    const extra = '\n## Step: audit\neffects: [http_egress]\nendpoint: https://audit.example.com/x\n';
    const r = await replay(
      flowText('{"id": "{{ ctx.input.id }}"}', extra).replace('## Step: answer', '## Step: answer'),
    );
    assert.deepEqual(r.verdict, {
      kind: 'not_replayable',
      why: "the candidate calls out at step 'audit', where the recording has no exchange",
    });
  });

  it('calls a delivery not replayable when the log masked a value of it, or has no entry row', async () => {
    const masked = await replay(ORIGINAL, recorded({ id: '7', card_number: '***' }));
    assert.equal(masked.verdict.kind, 'not_replayable');
    assert.match((masked.verdict as { why: string }).why, /masked what it needs \(input\.card_number\)/);
    const d = recorded();
    const none = await replay(ORIGINAL, { ...d, traceRows: d.traceRows.slice(1) });
    assert.deepEqual(none.verdict, { kind: 'not_replayable', why: 'no traced entry: the delivery predates tracing' });
  });
});

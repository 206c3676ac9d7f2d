/**
 * Replay's core (issue 38): a recorded delivery against a candidate flow, its call outs answered
 * from the recording: the same file is the same; a changed answer, another step order or another
 * publication differs at its paths (never its values); a new call out, a masked value the candidate
 * needs, an XML input or a delivery without its entry row is not replayable, and says why; a masked
 * value it does not need is no obstacle; an ignored or declared-volatile path does not count.
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
const recorded = (input: unknown = { id: '7' }): RecordedDelivery => ({
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

type Opts = Parameters<typeof replayDelivery>[3];

const replay = (candidate: string, d: RecordedDelivery = recorded(), opts: Opts = {}) => {
  const flow = loaded(candidate);
  return replayDelivery(
    flow,
    d,
    { flows: new Map([[`acme/${flow.ir.flow}`, flow]]), doors: EXAMPLE_DOORS, flowState: openScratchFlowState },
    opts,
  );
};

/** A flow that hands an order on to a queue and answers 202. */
const publisher = (target = 'fulfil', message = '{"id": "{{ ctx.input.id }}"}') => `---
flowdoc_version: "0.1"
flow: order
tenant: acme
effects: [queue_publish]
---

## Step: hand-off
queue: ${target}
\`\`\`ntd
${message}
\`\`\`

## Step: answer
response_status: 202
\`\`\`ntd
{"accepted": "{{ ctx.input.id }}"}
\`\`\`
`;

/** A delivery of `order` as traced, and the traced delivery of the flow it published to, under the same correlation id. */
const recordedOrder = (): RecordedDelivery => {
  const o = (over: Partial<StoredEvent>) => row({ flow: 'order', correlation_id: 'o-1', ...over });
  return {
    tenant: 'acme',
    flow: 'order',
    correlationId: 'o-1',
    traceRows: [
      o({ step: 'received', payload: { id: 'A-1' } }),
      o({ step: 'hand-off', payload: { id: 'A-1' } }),
      o({ flow: 'fulfil', step: 'enqueued', payload: { id: 'A-1' } }),
      o({ step: 'answer', payload: { accepted: 'A-1' } }),
      o({ flow: 'fulfil', step: 'dequeued', payload: { id: 'A-1' } }),
      o({ flow: 'fulfil', step: 'ship', payload: { shipped: true } }),
    ],
    logRows: [o({ event: 'completed', http_status: 202 })],
  };
};

const verdictOf = async (candidate: string, d?: RecordedDelivery, opts?: Opts) =>
  (await replay(candidate, d, opts)).verdict;

describe('replay of a recorded delivery against a candidate', () => {
  it('finds the same file the same, and shows both sides', async () => {
    const r = await replay(ORIGINAL);
    assert.deepEqual(r.verdict, { kind: 'same' });
    // The candidate's answer headers too; the recording has none (no deployed version given here).
    assert.deepEqual(r.candidate, { ...r.recorded, headers: { 'content-type': 'application/json' } });
    assert.deepEqual(r.recorded, {
      status: 200,
      outcome: 'answered',
      steps: ['price', 'answer'],
      body: { id: '7', price: 12.5 },
      published: {},
    });
  });

  it('finds a changed answer different at its paths; the verdict names no value', async () => {
    const r = await replay(flowText('{"id": "{{ ctx.input.id }}", "total": {{ ctx.input.price }}}'));
    assert.deepEqual(r.verdict, { kind: 'differs', paths: ['body.price', 'body.total'] });
    assert.doesNotMatch(JSON.stringify(r.verdict), /12\.5/);
    assert.deepEqual(r.candidate?.body, { id: '7', total: 12.5 });
  });

  it('finds another status and another set of steps different', async () => {
    const status = flowText('{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}}').replace(
      '## Step: answer\n',
      '## Step: answer\nresponse_status: 201\n',
    );
    assert.deepEqual(await verdictOf(status), { kind: 'differs', paths: ['status'] });
    const more = flowText(
      '{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}}',
      '\n## Step: check\n```validate\nhas(ctx.input.id) | id is required | syntactic\n```\n',
    );
    assert.deepEqual(await verdictOf(more), { kind: 'differs', paths: ['steps'] });
  });

  it('compares what was published, and to which queue; a published-to flow’s own rows are not the delivery’s', async () => {
    assert.deepEqual(await verdictOf(publisher(), recordedOrder()), { kind: 'same' });
    assert.deepEqual(
      await verdictOf(publisher('fulfil', '{"id": "{{ ctx.input.id }}", "rush": true}'), recordedOrder()),
      {
        kind: 'differs',
        paths: ['published.fulfil[0].rush'],
      },
    );
    // Which queue the deployed version wrote to is read from its IR.
    const version1 = loaded(publisher());
    const deployed = (_tenant: string, flow: string) => (flow === 'order' ? version1 : undefined);
    assert.deepEqual(await verdictOf(publisher('archive'), recordedOrder(), { deployed }), {
      kind: 'differs',
      paths: ['published.fulfil', 'published.archive'],
    });
  });

  it("compares the answer's headers with the deployed version's replay of the same delivery (tracing records none)", async () => {
    const version1 = loaded(ORIGINAL);
    const deployed = () => version1;
    const same = await replay(ORIGINAL, recorded(), { deployed });
    assert.deepEqual(same.verdict, { kind: 'same' });
    assert.equal(same.recorded?.headers?.['content-type'], 'application/json');
    const withHeader = ORIGINAL.replace(
      '## Step: answer\n',
      '## Step: answer\nresponse_header_x_quote: "{{ ctx.input.id }}"\n',
    );
    const r = await replay(withHeader, recorded(), { deployed });
    assert.deepEqual(r.verdict, { kind: 'differs', paths: ['headers.x-quote'] });
    assert.equal(r.candidate?.headers?.['x-quote'], '7');
    // Without the deployed version there is nothing to stand for the headers: they are not compared.
    assert.deepEqual(await verdictOf(withHeader), { kind: 'same' });
  });

  it('does not count an ignored path, [*] standing for any item; declared volatile paths only when asked', async () => {
    const candidate = flowText('{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}, "at": "{{ now() }}"}');
    assert.deepEqual((await verdictOf(candidate)).kind, 'differs');
    assert.deepEqual(await verdictOf(candidate, recorded(), { ignore: ['body.at'] }), { kind: 'same' });
    const listed = flowText('[{"id": "{{ ctx.input.id }}", "at": "{{ now() }}"}]');
    const d = recorded();
    const asList: RecordedDelivery = {
      ...d,
      traceRows: [...d.traceRows.slice(0, 2), row({ step: 'answer', payload: [{ id: '7' }] })],
    };
    assert.deepEqual(await verdictOf(listed, asList, { ignore: ['body[*].at'] }), { kind: 'same' });
    const declared = candidate.replace(
      'effects: [http_egress]\n',
      'effects: [http_egress]\nreplay_volatile: [body.at]\n',
    );
    assert.deepEqual(await verdictOf(declared), { kind: 'differs', paths: ['body.at'] });
    assert.deepEqual(await verdictOf(declared, recorded(), { ignoreVolatile: true }), { kind: 'same' });
  });

  it('calls a delivery not replayable where the candidate calls out beyond the recording, naming the step', async () => {
    const extra = '\n## Step: audit\neffects: [http_egress]\nendpoint: https://audit.example.com/x\n';
    const r = await replay(flowText('{"id": "{{ ctx.input.id }}"}', extra));
    assert.deepEqual(r.verdict, {
      kind: 'not_replayable',
      why: "the candidate calls out at step 'audit', where the recording has no exchange",
    });
  });

  it('replays past a masked value the candidate does not need; not one it answers with or sends out', async () => {
    const d = recorded({ id: '7', card_number: '***' });
    assert.deepEqual(await verdictOf(ORIGINAL, d), { kind: 'same' });
    // In the answer under a name the log masks too: both sides show the mask, nothing is lost.
    const maskedBack = flowText('{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}}');
    assert.deepEqual(await verdictOf(maskedBack, d), { kind: 'same' });
    const needs = 'the candidate needs a value the log masked (input.card_number)';
    // The answer carries it under a name the log does not mask (the flow's input, read by its only step).
    const answers = ORIGINAL.replace(/## Step: price[^#]*/, '').replace(
      /```ntd\n.*\n```/,
      '```ntd\n{"id": "{{ ctx.input.id }}", "card": "{{ ctx.input.card_number }}"}\n```',
    );
    assert.deepEqual(await verdictOf(answers, d), { kind: 'not_replayable', why: needs });
    const sends = ORIGINAL.replace('/price/{{ ctx.input.id }}', '/price/{{ ctx.input.card_number }}');
    assert.deepEqual(await verdictOf(sends, d), { kind: 'not_replayable', why: needs });
    const decides = ORIGINAL.replace(
      'method: GET\n',
      'method: GET\n```validate\nsize(ctx.input.card_number) > 2 | card too short | semantic\n```\n',
    );
    assert.deepEqual(await verdictOf(decides, d), { kind: 'not_replayable', why: needs });
  });

  it('replays a queue delivery with its retry: the refused first call, then the answer; attempts and steps compared', async () => {
    const q = (over: Partial<StoredEvent>) => row({ correlation_id: 'q-1', ...over });
    const queued: RecordedDelivery = {
      tenant: 'acme',
      flow: 'quote',
      correlationId: 'q-1',
      traceRows: [
        q({ step: 'dequeued', payload: { id: '7' } }),
        q({
          event: 'egress_traced',
          step: 'price',
          reason: 'connection refused',
          payload: { headers: {}, body: null },
        }),
        q({ step: 'dequeued', payload: { id: '7' } }),
        q({
          event: 'egress_traced',
          step: 'price',
          http_status: 200,
          payload: { headers: { 'content-type': 'application/json' }, body: { id: '7', price: 12.5 } },
        }),
        q({ step: 'answer', payload: { id: '7', price: 12.5 } }),
      ],
      logRows: [q({ event: 'queue_processed', http_status: 200, outcome: 'succeeded' })],
    };
    const r = await replay(ORIGINAL, queued);
    assert.deepEqual(r.verdict, { kind: 'same' });
    assert.deepEqual(r.recorded, {
      status: 200,
      outcome: 'answered',
      attempts: 2,
      steps: ['price', 'dequeued', 'price', 'answer'],
      body: { id: '7', price: 12.5 },
      published: {},
    });
    // A policy of one attempt dead-letters it at the refused call.
    const once = ORIGINAL.replace('effects: [http_egress]\n', 'effects: [http_egress]\nqueue_max_attempts: 1\n');
    assert.deepEqual(await verdictOf(once, queued), {
      kind: 'differs',
      paths: ['status', 'outcome', 'attempts', 'steps', 'body'],
    });
  });

  it('calls a delivery not replayable when its input was XML (kept as a marker), or it has no entry row', async () => {
    const xml = await verdictOf(ORIGINAL, recorded({ _unrepresentable: 'order' }));
    assert.deepEqual(xml, {
      kind: 'not_replayable',
      why: 'an XML value it received is kept by the log as a marker (input)',
    });
    const d = recorded();
    const xmlAnswer = {
      ...d,
      traceRows: [...d.traceRows.slice(0, 2), row({ step: 'answer', payload: { _unrepresentable: 'quote' } })],
    };
    assert.deepEqual(await verdictOf(ORIGINAL, xmlAnswer), {
      kind: 'not_replayable',
      why: 'its answer is an XML value, which the log keeps only as a marker',
    });
    const none = await replay(ORIGINAL, { ...d, traceRows: d.traceRows.slice(1) });
    assert.deepEqual(none.verdict, { kind: 'not_replayable', why: 'no traced entry: the delivery predates tracing' });
  });
});

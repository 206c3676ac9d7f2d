// The diagram of every feature flow: its doors, its column, each step's badges and its links to
// other flows, one case per examples/features/*.ir.json (a feature added without a case fails).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FlowIR } from '../../ir/types.js';
import { endpointHost, flowGraph, type FlowGraph } from './flow-graph.js';
import { layoutGraph } from './graph-layout.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const FEATURES = join(ROOT, 'examples', 'features');

function ir(file: string): FlowIR {
  return JSON.parse(readFileSync(join(ROOT, 'examples', file), 'utf8')) as FlowIR;
}

/** A graph as a person would check it: node ids with their badges, and the edges other than step order. */
function summary(g: FlowGraph): { nodes: string[]; links: string[] } {
  return {
    nodes: g.nodes.map((n) =>
      n.badges.length === 0 ? n.id : `${n.id} [${n.badges.map((b) => `${b.kind} ${b.text}`.trim()).join('; ')}]`,
    ),
    links: g.edges.filter((e) => e.kind !== 'next').map((e) => `${e.from} ${e.kind} ${e.to}`),
  };
}

const RUN_AND_QUEUE = ['door:http', 'door:queue'];

const CASES: Record<string, { nodes: string[]; links?: string[] }> = {
  composition: {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:enrich [call_flow enrich-customer]',
      'step:each-line [foreach ctx.input.lines; ntd json; snapshot order]',
      'step:price-lines [split ctx.input; call_flow price-line; set_ctx priced_lines]',
      'step:notify-all [restore_body order; fork 2 flows; set_ctx notifications]',
      'step:answer [restore_body order; ntd json]',
      'flow:enrich-customer',
      'flow:price-line',
      'flow:notify-email',
      'flow:notify-sms',
    ],
    links: [
      'step:enrich calls flow:enrich-customer',
      'step:price-lines splits flow:price-line',
      'step:notify-all forks flow:notify-email',
      'step:notify-all forks flow:notify-sms',
    ],
  },
  'condition-filter': { nodes: [...RUN_AND_QUEUE, 'step:only-paid [condition]', 'step:answer [ntd json]'] },
  'dedup-and-correlation': {
    nodes: [
      ...RUN_AND_QUEUE,
      'guard [dedup ctx.input.order_id, 48 h; correlation open ctx.input.order_id, 3600 s]',
      'step:accept [ntd json]',
    ],
  },
  'fault-handler': {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:check [validate 1 rule]',
      'step:call [http_egress POST unreliable.example.com]',
      'step:alert [http_egress POST alerts.example.com; snapshot failure]',
      'step:answer [restore_body failure; ntd json; response_status]',
    ],
    links: ['step:check fault step:alert'],
  },
  'grpc-inbound': { nodes: [...RUN_AND_QUEUE, 'door:grpc', 'step:answer [ntd json]'] },
  'http-egress': {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:pricing-token [secret_read pricing_token]',
      'step:price [http_egress POST ${PRICING_URL}; bearer_token]',
    ],
  },
  'ntd-json': { nodes: [...RUN_AND_QUEUE, 'step:shape [ntd json]'] },
  'ntd-text': { nodes: [...RUN_AND_QUEUE, 'step:shape [ntd text]'] },
  'ntd-xml': { nodes: [...RUN_AND_QUEUE, 'step:shape [ntd xml]'] },
  'oauth2-egress': {
    nodes: [...RUN_AND_QUEUE, 'step:call [http_egress POST api.example.com; oauth2; tls client certificate]'],
  },
  'queue-publish': {
    nodes: [...RUN_AND_QUEUE, 'step:hand-off [ntd json; queue_publish fulfil-order]', 'flow:fulfil-order'],
    links: ['step:hand-off publishes flow:fulfil-order'],
  },
  'response-shaping': {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:answer [set_ctx order_id, retries; response_status; response_header x-correlation-id, location]',
    ],
  },
  'scheduled-report': { nodes: [...RUN_AND_QUEUE, 'door:cron', 'step:build [ntd json]'] },
  'secret-read': {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:api_token [secret_read api_token]',
      'step:other-secret [secret_read partner_password]',
      'step:call [http_egress POST partner.example.com; bearer_token]',
    ],
  },
  'snapshot-restore': {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:keep [snapshot original]',
      'step:reshape [ntd json]',
      'step:back [restore_body original]',
    ],
  },
  'soap-service': {
    nodes: [
      ...RUN_AND_QUEUE,
      'door:soap',
      'step:call [ntd xml; http_egress POST ${QUOTES_URL} (SOAP 1.2 GetQuote); set_ctx soap_fault_code, soap_fault_string]',
      'step:fault-if-empty [validate 1 rule]',
    ],
  },
  'use-library': {
    nodes: [
      ...RUN_AND_QUEUE,
      'step:check [use common/require-id; validate 1 rule]',
      'step:post [use common/post-json; http_egress POST ${ORDERS_URL}]',
    ],
  },
  'validate-input': { nodes: [...RUN_AND_QUEUE, 'step:check [validate 5 rules]'] },
};

test('every feature flow has a diagram case', () => {
  const features = readdirSync(FEATURES)
    .filter((n) => n.endsWith('.ir.json'))
    .map((n) => n.replace(/\.ir\.json$/, ''));
  assert.deepEqual(features.sort(), Object.keys(CASES).sort());
});

for (const [name, expected] of Object.entries(CASES)) {
  test(`the diagram of ${name}: doors, column, badges and links`, () => {
    const got = summary(flowGraph(ir(`features/${name}.ir.json`)));
    assert.deepEqual(got, { nodes: expected.nodes, links: expected.links ?? [] });
  });
}

test('the doors lead into the first node, the steps follow one another, the fault branch has its own order', () => {
  const g = flowGraph(ir('demo/order-intake.ir.json'));
  const next = g.edges.filter((e) => e.kind === 'next').map((e) => `${e.from} -> ${e.to}`);
  assert.deepEqual(next, [
    'door:http -> guard',
    'door:queue -> guard',
    'guard -> step:check',
    'step:check -> step:hand-off',
    'step:hand-off -> step:answer',
  ]);
  const fault = flowGraph(ir('features/fault-handler.ir.json'));
  assert.ok(fault.edges.some((e) => e.from === 'step:alert' && e.to === 'step:answer' && e.kind === 'next'));
  assert.deepEqual(
    fault.nodes.filter((n) => n.kind === 'fault-step').map((n) => n.step),
    ['alert', 'answer'],
  );
});

test('the doors carry their route, schedule, operation or method', () => {
  const cron = flowGraph(ir('features/scheduled-report.ir.json')).nodes.find((n) => n.id === 'door:cron')!;
  assert.equal(cron.detail, '0 0 6 * * *');
  const soap = flowGraph(ir('features/soap-service.ir.json')).nodes.find((n) => n.id === 'door:soap')!;
  assert.equal(soap.label, 'SOAP GetQuote');
  const grpc = flowGraph(ir('features/grpc-inbound.ir.json')).nodes.find((n) => n.id === 'door:grpc')!;
  assert.equal(grpc.detail, 'acme.orders.Orders/Create');
  const queue = flowGraph(ir('features/queue-publish.ir.json')).nodes.find((n) => n.id === 'door:queue')!;
  assert.equal(queue.detail, 'up to 5 attempts');
});

test('a closing correlation links the flow it closes; an opening one the flow it enqueues on timeout', () => {
  const base = ir('features/dedup-and-correlation.ir.json');
  const closing = flowGraph({
    ...base,
    dedup: undefined,
    correlation: { kind: 'close', key: 'ctx.input.id', closes: 'opener' },
  });
  assert.deepEqual(summary(closing).links, ['guard closes flow:opener']);
  assert.equal(closing.nodes.find((n) => n.id === 'guard')!.badges[0]!.kind, 'correlation close');
  const opening = flowGraph({
    ...base,
    correlation: { kind: 'open', key: 'ctx.input.id', deadlineSecs: 60, onTimeout: 'chase' },
  });
  assert.deepEqual(summary(opening).links, ['guard on-timeout flow:chase']);
});

test('a flow reached twice is drawn once, with an edge from each step', () => {
  const base = ir('features/queue-publish.ir.json');
  const step = base.steps[0]!;
  const g = flowGraph({ ...base, steps: [step, { ...step, name: 'again' }] });
  assert.equal(g.nodes.filter((n) => n.kind === 'flow').length, 1);
  assert.deepEqual(summary(g).links, [
    'step:hand-off publishes flow:fulfil-order',
    'step:again publishes flow:fulfil-order',
  ]);
});

test('endpointHost: the host of a literal URL, the template when the host is known only at run time', () => {
  const cases: Array<readonly [string, string]> = [
    ['https://api.example.com/v1/x', 'api.example.com'],
    ['http://127.0.0.1:8080/x?y=1', '127.0.0.1:8080'],
    ['https://api.example.com/quote/{{ ctx.input.id }}', 'api.example.com'],
    ['${PRICING_URL}/quote/{{ ctx.input.id }}', '${PRICING_URL}'],
    ['{{ ctx.target }}/x', '{{ ctx.target }}'],
    ['https://user:secret@api.example.com/x', 'api.example.com'],
    ['https://${HOST}/x', 'https://${HOST}'],
  ];
  for (const [endpoint, host] of cases) assert.equal(endpointHost(endpoint), host, endpoint);
});

/** Every example flow: no two boxes overlap, every box and edge point is inside the drawing. */
test('the layout of every example flow keeps boxes apart and inside the drawing', () => {
  const all = ['features', 'features/composition', 'demo'].flatMap((dir) =>
    readdirSync(join(ROOT, 'examples', dir))
      .filter((n) => n.endsWith('.ir.json'))
      .map((n) => `${dir}/${n}`),
  );
  assert.ok(all.length >= 25);
  for (const file of all) {
    const layout = layoutGraph(flowGraph(ir(file)));
    const boxes = layout.boxes;
    for (const b of boxes) {
      assert.ok(
        b.x >= 0 && b.y >= 0 && b.x + b.w <= layout.width && b.y + b.h <= layout.height,
        `${file}: ${b.node.id}`,
      );
      for (const badge of b.badges)
        assert.ok(badge.x + badge.w <= b.x + b.w, `${file}: a badge of ${b.node.id} overflows`);
    }
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, c] = [boxes[i]!, boxes[j]!];
        const apart = a.x + a.w <= c.x || c.x + c.w <= a.x || a.y + a.h <= c.y || c.y + c.h <= a.y;
        assert.ok(apart, `${file}: ${a.node.id} overlaps ${c.node.id}`);
      }
    for (const r of layout.routes)
      for (const [x, y] of r.points) assert.ok(x >= 0 && y >= 0 && x <= layout.width && y <= layout.height, file);
  }
});

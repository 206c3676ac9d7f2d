// The three drawings of a flow graph: the SVG (well-formed, escaped, live numbers on their lines,
// the step that failed most marked) and the Mermaid and DOT texts (a hostile label stays a label).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkXml, decodeXmlText } from '../../common/xml.js';
import type { FlowIR } from '../../ir/types.js';
import { diagramSvg, failedMost, type DiagramNumbers } from './diagram-svg.js';
import { diagramDot, diagramMermaid } from './diagram-text.js';
import { flowGraph } from './flow-graph.js';
import { niceMax, sparklineSvg, timeChartSvg } from './chart-svg.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const ir = (file: string): FlowIR => JSON.parse(readFileSync(join(ROOT, 'examples', file), 'utf8')) as FlowIR;

const HOSTILE = `ctx.input.a < "</text><script>alert(1)</script>" && ctx.input.b == '"]; x --> y'`;

/** A flow whose expressions and endpoint hold every character a drawing must escape. */
function hostileFlow(): FlowIR {
  const base = ir('demo/order-intake.ir.json');
  return {
    ...base,
    dedup: { key: HOSTILE, memoizeResponse: false, onFailure: 'absorb' },
    steps: [
      { ...base.steps[0]!, foreach: HOSTILE },
      { ...base.steps[1]!, http: { endpoint: '{{ "<b>" }}', method: 'POST', headers: {} } },
    ],
  };
}

/** The text of every `<text>` element, decoded. */
function texts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => decodeXmlText(m[1]!));
}

test('the SVG is well-formed XML with no script, and a hostile expression is drawn as text', () => {
  const svg = diagramSvg(flowGraph(hostileFlow()));
  assert.equal(checkXml(svg).root.local, 'svg');
  assert.doesNotMatch(svg, /<script/i);
  const titles = [...svg.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => decodeXmlText(m[1]!));
  assert.ok(
    titles.some((t) => t.includes(`dedup ${HOSTILE}`)),
    'the full expression is in the guard title',
  );
  assert.ok(texts(svg).some((t) => t.startsWith('dedup ctx.input.a < "</text>')));
});

test('the SVG is the same bytes for the same flow, and carries no live numbers without them', () => {
  const g = flowGraph(ir('features/composition.ir.json'));
  assert.equal(diagramSvg(g), diagramSvg(flowGraph(ir('features/composition.ir.json'))));
  assert.doesNotMatch(diagramSvg(g), /class="numbers"/);
});

test('the SVG names its nodes and edges so a reader (or a test) can find them', () => {
  const svg = diagramSvg(flowGraph(ir('features/composition.ir.json')));
  const nodes = [...svg.matchAll(/<g class="node ([a-z-]+)[^"]*" data-node="([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(nodes, [
    'door door:http',
    'door door:queue',
    'step step:enrich',
    'step step:each-line',
    'step step:price-lines',
    'step step:notify-all',
    'step step:answer',
    'flow flow:enrich-customer',
    'flow flow:price-line',
    'flow flow:notify-email',
    'flow flow:notify-sms',
  ]);
  assert.match(svg, /<path class="edge splits" data-from="step:price-lines" data-to="flow:price-line"/);
  assert.match(svg, /<a href="\/ui\/registry\/acme\/price-line"><g class="node flow"/);
});

test('live numbers: deliveries per door, runs, failures and p95 per step, and the step that failed most marked', () => {
  const numbers: DiagramNumbers = {
    doors: { http: 7, queue: 1 },
    steps: new Map([
      ['check', { runs: 8, failures: 2, p95Ms: 1.25 }],
      ['hand-off', { runs: 6, failures: 5, p95Ms: 48 }],
      ['answer', { runs: 1, failures: 0, p95Ms: null }],
    ]),
  };
  const svg = diagramSvg(flowGraph(ir('demo/order-intake.ir.json')), numbers);
  const lines = texts(svg.replace(/<text(?![^>]*class="numbers")[^>]*>[^<]*<\/text>/g, ''));
  assert.deepEqual(lines, [
    '7 deliveries',
    '1 delivery',
    '8 runs · 2 failed · p95 1.3 ms',
    '6 runs · 5 failed · p95 48 ms · failed most',
    '1 run · 0 failed',
    'no runs',
  ]);
  assert.match(svg, /<g class="node step failed-most" data-node="step:hand-off"/);
  assert.equal(failedMost({ doors: {}, steps: new Map([['a', { runs: 3, failures: 0, p95Ms: 1 }]]) }), undefined);
});

test('Mermaid: one node per line with its label in one quoted string, hostile text in entity codes', () => {
  const text = diagramMermaid(flowGraph(hostileFlow()));
  const lines = text.trimEnd().split('\n');
  assert.equal(lines[0], 'flowchart TD');
  const nodeLines = lines.filter((l) => /^ {2}n\d+[[({]/.test(l));
  assert.equal(nodeLines.length, flowGraph(hostileFlow()).nodes.length);
  for (const l of nodeLines) assert.match(l, /^ {2}n\d+(\(\[|\{\{|\[\[|\[)"(?:[^"<>]|<br\/>)*"(\]\)|\}\}|\]\]|\])$/, l);
  assert.match(text, /n2\{\{"before the first step<br\/>dedup ctx\.input\.a #60; #34;#60;\/text#62;/);
  assert.match(text, /n\d+ -\. "when a step fails" \.-> n\d+/);
  assert.match(text, /n\d+ -- "publishes to" --> n\d+/);
});

test('DOT: quotes and backslashes escaped, every statement on its own line', () => {
  const g = flowGraph(hostileFlow());
  const text = diagramDot({ ...g, flow: 'a"b\\c' });
  assert.match(text, /^digraph "demo\/a\\"b\\\\c" \{/);
  const statements = text.split('\n').slice(4, -2);
  for (const s of statements) assert.match(s, /^ {2}"(?:[^"\\]|\\.)*"( -> "(?:[^"\\]|\\.)*")?( \[.*\])?;$/, s);
  assert.match(text, /"step:check" -> "step:rejected" \[label="when a step fails", style=dashed/);
  assert.match(text, /"flow:fulfil-order" \[label="fulfil-order", .*URL="\/ui\/registry\/demo\/fulfil-order"\];/);
});

test('a time chart: well-formed, its values in data-values, a gap for an unmeasured period, text escaped', () => {
  const svg = timeChartSvg({
    title: 'a <b>"chart"</b>',
    times: [0, 60_000, 120_000],
    kind: 'lines',
    per: 'minute',
    unit: 'ms',
    series: [{ name: 'p95 <i>', colour: '#e07b00', values: [3, null, 12.25] }],
  });
  assert.equal(checkXml(svg).root.local, 'svg');
  assert.doesNotMatch(svg, /<b>|<i>/);
  assert.match(svg, /<g class="series" data-series="p95 &lt;i&gt;" data-values="3,,12.3">/);
  // Two points, no line through the gap: two separate moves.
  assert.equal([...svg.matchAll(/<circle /g)].length, 2);
  assert.match(svg, /<path d="M[\d.]+,[\d.]+ M[\d.]+,[\d.]+"/);
  assert.deepEqual(
    [...svg.matchAll(/<text class="x-tick"[^>]*>([^<]*)</g)].map((m) => m[1]),
    ['00:00', '00:01', '00:02'],
  );
  const bars = timeChartSvg({
    title: 't',
    times: [0, 60_000],
    kind: 'bars',
    per: 'minute',
    series: [{ name: 'deliveries', colour: '#3b6fd1', values: [0, 5] }],
  });
  assert.equal(
    [...bars.matchAll(/<rect x="[^"]*" y="[^"]*" width="[^"]*" height="[^"]*" fill="#3b6fd1"><title>/g)].length,
    1,
  );
  assert.deepEqual(
    [...bars.matchAll(/<text class="y-tick"[^>]*>([^<]*)</g)].map((m) => m[1]),
    ['0', '5'],
  );
});

test('niceMax: 1, 2 or 5 times a power of ten at or above the largest value; a sparkline keeps its values', () => {
  const cases: Array<readonly [number, number]> = [
    [0, 1],
    [0.3, 0.5],
    [1, 1],
    [3, 5],
    [7, 10],
    [11, 20],
    [480, 500],
    [501, 1000],
  ];
  for (const [max, nice] of cases) assert.equal(niceMax(max), nice, String(max));
  assert.match(sparklineSvg([0, 2, 1], 'acme/x'), /<polyline data-values="0,2,1" points="0,22 60,2 120,12"/);
});

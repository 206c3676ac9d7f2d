/**
 * A flow graph drawn as one SVG document: presentation attributes only (no style element, no
 * script), so it shows inline under the UI's Content-Security-Policy and as a file in a pull
 * request alike. Every text and attribute value is escaped. `svc flows show --format svg` and the
 * UI draw the same document; the UI adds live numbers on the lines the layout keeps for them.
 */
import { escapeXml } from '../../common/xml.js';
import type { DoorName } from '../use-cases/flow-catalog.js';
import type { Badge, FlowGraph, GraphNode, NodeKind } from './flow-graph.js';
import { BADGE_FONT_PX, BADGE_H, FONT_PX, layoutGraph, type Box, type Route } from './graph-layout.js';

/** What a step did in a window. */
export interface StepNumbers {
  readonly runs: number;
  readonly failures: number;
  /** Milliseconds; null when no run was timed. */
  readonly p95Ms: number | null;
}

/** Live numbers for one window: deliveries per door, and per step (by step name) runs, failures and p95. */
export interface DiagramNumbers {
  readonly doors: Partial<Record<DoorName, number>>;
  readonly steps: ReadonlyMap<string, StepNumbers>;
}

const FONT = 'system-ui, -apple-system, Segoe UI, sans-serif';
const INK = '#1d2330';
const MUTED = '#5b6475';
const BAD = '#b42318';

const FILL: Record<NodeKind, { fill: string; stroke: string }> = {
  door: { fill: '#e8eefc', stroke: '#7a8fc7' },
  guard: { fill: '#fff7e0', stroke: '#c9a43a' },
  step: { fill: '#ffffff', stroke: '#9aa4b8' },
  'fault-step': { fill: '#fdf0f0', stroke: '#d07a7a' },
  flow: { fill: '#eef7ef', stroke: '#6aa874' },
};

/** Effects warm, checks blue, composition green, the rest grey. */
function badgeFill(b: Badge): string {
  if (b.kind === 'http_egress' || b.kind === 'queue_publish' || b.kind === 'secret_read') return '#fde7c8';
  if (b.kind === 'validate' || b.kind === 'condition' || b.kind.startsWith('dedup') || b.kind.startsWith('corr'))
    return '#e3ecfa';
  if (b.kind === 'call_flow' || b.kind === 'foreach' || b.kind === 'split' || b.kind === 'fork') return '#e2f2e4';
  return '#eceff4';
}

const e = escapeXml;
const n = (v: number): string => String(Math.round(v * 10) / 10);

/** The page of another flow of the tenant, in the management UI. */
export function flowPageHref(tenant: string, flow: string): string {
  return `/ui/registry/${encodeURIComponent(tenant)}/${encodeURIComponent(flow)}`;
}

function text(x: number, y: number, value: string, attrs = ''): string {
  return `<text x="${n(x)}" y="${n(y)}"${attrs}>${e(value)}</text>`;
}

function routePath(r: Route): string {
  const d = r.points.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${n(x)},${n(y)}`).join(' ');
  const dashed = r.edge.kind === 'fault' ? ' stroke-dasharray="5 4"' : '';
  const colour = r.edge.kind === 'fault' ? BAD : MUTED;
  const path = `<path class="edge ${r.edge.kind}" data-from="${e(r.edge.from)}" data-to="${e(r.edge.to)}" d="${d}" fill="none" stroke="${colour}" stroke-width="1.4"${dashed} marker-end="url(#svc-arrow)"/>`;
  if (r.label === undefined) return path;
  return `${path}${text(r.label.x, r.label.y, r.label.text, ` font-size="${BADGE_FONT_PX}" fill="${colour}"`)}`;
}

function badgeMarkup(b: Box['badges'][number]): string {
  return (
    `<g class="badge" data-badge="${e(b.badge.kind)}"><rect x="${n(b.x)}" y="${n(b.y)}" width="${n(b.w)}" height="${BADGE_H}" rx="3" fill="${badgeFill(b.badge)}"/>` +
    `${text(b.x + 5, b.y + 13, b.text, ` font-size="${BADGE_FONT_PX}"`)}</g>`
  );
}

/** The numbers line of a step or door, and whether the step is the one that failed most. */
function numbersLine(node: GraphNode, numbers: DiagramNumbers | undefined): string | undefined {
  if (numbers === undefined) return undefined;
  if (node.door !== undefined) {
    const count = numbers.doors[node.door] ?? 0;
    return `${count} deliver${count === 1 ? 'y' : 'ies'}`;
  }
  if (node.step === undefined) return undefined;
  const s = numbers.steps.get(node.step);
  if (s === undefined || s.runs === 0) return 'no runs';
  const p95 = s.p95Ms === null ? '' : ` · p95 ${s.p95Ms < 10 ? s.p95Ms.toFixed(1) : Math.round(s.p95Ms)} ms`;
  return `${s.runs} run${s.runs === 1 ? '' : 's'} · ${s.failures} failed${p95}`;
}

/** The step with the most failures in the window (the first of a tie); none when nothing failed. */
export function failedMost(numbers: DiagramNumbers | undefined): string | undefined {
  let worst: string | undefined;
  let most = 0;
  for (const [step, s] of numbers?.steps ?? []) {
    if (s.failures > most) {
      most = s.failures;
      worst = step;
    }
  }
  return worst;
}

function nodeMarkup(
  box: Box,
  graph: FlowGraph,
  numbers: DiagramNumbers | undefined,
  worst: string | undefined,
): string {
  const { node } = box;
  const isWorst = worst !== undefined && node.step === worst;
  const { fill, stroke } = FILL[node.kind];
  const dataStep = node.step === undefined ? '' : ` data-step="${e(node.step)}"`;
  const dataDoor = node.door === undefined ? '' : ` data-door="${e(node.door)}"`;
  const classes = `node ${node.kind}${isWorst ? ' failed-most' : ''}`;
  const full = [node.label, node.detail, ...node.badges.map((b) => `${b.kind} ${b.text}`.trim())]
    .filter((t) => t !== undefined)
    .join('\n');
  let out = `<g class="${classes}" data-node="${e(node.id)}"${dataStep}${dataDoor}><title>${e(full)}</title>`;
  out += `<rect x="${n(box.x)}" y="${n(box.y)}" width="${n(box.w)}" height="${n(box.h)}" rx="6" fill="${fill}" stroke="${isWorst ? BAD : stroke}" stroke-width="${isWorst ? 2.5 : 1.2}"/>`;
  const bold = node.kind === 'flow' ? '' : ' font-weight="600"';
  const labelY = node.kind === 'flow' ? box.y + box.h / 2 + 4 : box.y + 18;
  out += text(box.x + 8, labelY, box.label, ` class="label" font-size="${FONT_PX}"${bold}`);
  if (box.detail !== undefined)
    out += text(box.x + 8, box.y + 34, box.detail, ` font-size="${BADGE_FONT_PX}" fill="${MUTED}"`);
  for (const b of box.badges) out += badgeMarkup(b);
  const line = numbersLine(node, numbers);
  if (line !== undefined && box.numbersY !== undefined) {
    const colour = isWorst ? BAD : MUTED;
    const marked = isWorst ? `${line} · failed most` : line;
    out += text(box.x + 8, box.numbersY, marked, ` class="numbers" font-size="${BADGE_FONT_PX}" fill="${colour}"`);
  }
  out += '</g>';
  if (node.flow === undefined) return out;
  return `<a href="${e(flowPageHref(graph.tenant, node.flow))}">${out}</a>`;
}

/**
 * The SVG document of a flow graph; with `numbers`, each step and door carries its live numbers
 * and the step that failed most is marked. Without them it is the document `svc flows show
 * --format svg` prints.
 */
export function diagramSvg(graph: FlowGraph, numbers?: DiagramNumbers): string {
  const layout = layoutGraph(graph);
  const worst = failedMost(numbers);
  const title = `Flow ${graph.tenant}/${graph.flow}`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="flow-diagram" width="${layout.width}" height="${layout.height}" viewBox="0 0 ${layout.width} ${layout.height}" role="img" aria-label="${e(title)}" font-family="${FONT}" fill="${INK}">` +
    `<title>${e(title)}</title>` +
    `<defs><marker id="svc-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="${MUTED}"/></marker></defs>` +
    layout.routes.map(routePath).join('') +
    layout.boxes.map((b) => nodeMarkup(b, graph, numbers, worst)).join('') +
    '</svg>\n'
  );
}

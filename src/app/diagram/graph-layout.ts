/**
 * Where each node of a flow graph goes: the doors in a row on top, the guard and the steps in one
 * column below them, the fault branch under the steps (reached along a rail on the left), and the
 * other flows in a column on the right beside the step that reaches them. Text is measured by an
 * average character width, so the drawing is the same on every machine and needs no fonts.
 * Pure; `diagram-svg.ts` draws it.
 */
import { EDGE_WORDS, type Badge, type FlowGraph, type GraphEdge, type GraphNode } from './flow-graph.js';

export const FONT_PX = 12;
export const BADGE_FONT_PX = 11;
/** Average advance of a character of the sans-serif face at 12 px and 11 px (wide enough for most text). */
const CHAR_PX = 6.9;
const BADGE_CHAR_PX = 6.1;

const MARGIN = 16;
const RAIL_X = MARGIN + 4;
const MAIN_X = MARGIN + 28;
const COLUMN_W = 320;
const DOOR_W = 168;
const DOOR_H = 62;
const DOOR_GAP = 12;
const FLOW_GAP = 110;
const FLOW_W = 200;
const FLOW_H = 36;
const ROW_GAP = 28;
const FAULT_GAP = 46;
const NAME_H = 26;
export const BADGE_H = 18;
const BADGE_ROW_H = 22;
/** The line under a step's badges where the UI writes its live numbers (kept empty elsewhere, so both drawings match). */
export const NUMBERS_H = 20;
const PAD = 8;

export interface PlacedBadge {
  readonly badge: Badge;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  /** The badge's text as drawn (cut with an ellipsis when it would overflow the box). */
  readonly text: string;
}

export interface Box {
  readonly node: GraphNode;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
  /** The label as drawn (cut with an ellipsis when too long; the full label goes in a title). */
  readonly label: string;
  readonly detail?: string;
  readonly badges: readonly PlacedBadge[];
  /** The baseline of the live-numbers line (steps, fault steps and doors). */
  readonly numbersY?: number;
}

export interface Route {
  readonly edge: GraphEdge;
  readonly points: ReadonlyArray<readonly [number, number]>;
  /** Where the edge's word goes (`calls`, `publishes to`, `when a step fails`), if it has one. */
  readonly label?: { readonly text: string; readonly x: number; readonly y: number };
}

export interface Layout {
  readonly width: number;
  readonly height: number;
  readonly boxes: readonly Box[];
  readonly routes: readonly Route[];
}

/** `text` cut to `width` pixels at `charPx` a character, ending in an ellipsis when cut. */
export function fit(text: string, width: number, charPx = CHAR_PX): string {
  const max = Math.max(1, Math.floor(width / charPx));
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

export function textWidth(text: string, charPx = CHAR_PX): number {
  return [...text].length * charPx;
}

function badgeText(b: Badge): string {
  return b.text === '' ? b.kind : `${b.kind} ${b.text}`;
}

/** Badges left to right, wrapping onto new rows inside `width`. */
function placeBadges(badges: readonly Badge[], x0: number, y0: number, width: number): PlacedBadge[] {
  const placed: PlacedBadge[] = [];
  let x = x0;
  let y = y0;
  for (const badge of badges) {
    const text = fit(badgeText(badge), width - 10, BADGE_CHAR_PX);
    const w = Math.ceil(textWidth(text, BADGE_CHAR_PX) + 10);
    if (x > x0 && x + w > x0 + width) {
      x = x0;
      y += BADGE_ROW_H;
    }
    placed.push({ badge, x, y, w, text });
    x += w + 5;
  }
  return placed;
}

function badgeRows(badges: readonly PlacedBadge[]): number {
  return new Set(badges.map((b) => b.y)).size;
}

/** A step's (or the guard's) box at (x, y): its name, its badges, then its numbers line. */
function columnBox(node: GraphNode, x: number, y: number): Box {
  const inner = COLUMN_W - 2 * PAD;
  const badges = placeBadges(node.badges, x + PAD, y + NAME_H, inner);
  const counted = node.kind === 'step' || node.kind === 'fault-step';
  const h = NAME_H + badgeRows(badges) * BADGE_ROW_H + (counted ? NUMBERS_H : 0) + 4;
  return {
    node,
    x,
    y,
    w: COLUMN_W,
    h,
    label: fit(node.label, inner),
    badges,
    numbersY: counted ? y + h - 8 : undefined,
  };
}

const right = (b: Box): readonly [number, number] => [b.x + b.w, b.y + Math.min(b.h / 2, 18)];
const left = (b: Box): readonly [number, number] => [b.x, b.y + Math.min(b.h / 2, 18)];

export function layoutGraph(graph: FlowGraph): Layout {
  const boxes = new Map<string, Box>();
  const of = (id: string): Box => boxes.get(id)!;

  const doors = graph.nodes.filter((n) => n.kind === 'door');
  doors.forEach((node, i) => {
    const x = MAIN_X + i * (DOOR_W + DOOR_GAP);
    boxes.set(node.id, {
      node,
      x,
      y: MARGIN,
      w: DOOR_W,
      h: DOOR_H,
      label: fit(node.label, DOOR_W - 2 * PAD),
      detail: node.detail === undefined ? undefined : fit(node.detail, DOOR_W - 2 * PAD),
      badges: [],
      numbersY: MARGIN + DOOR_H - 9,
    });
  });

  let y = MARGIN + DOOR_H + 44;
  for (const node of graph.nodes.filter((n) => n.kind === 'guard' || n.kind === 'step')) {
    const box = columnBox(node, MAIN_X, y);
    boxes.set(node.id, box);
    y = box.y + box.h + ROW_GAP;
  }
  const faultSteps = graph.nodes.filter((n) => n.kind === 'fault-step');
  if (faultSteps.length > 0) y += FAULT_GAP - ROW_GAP;
  for (const node of faultSteps) {
    const box = columnBox(node, MAIN_X, y);
    boxes.set(node.id, box);
    y = box.y + box.h + ROW_GAP;
  }
  let bottom = y - ROW_GAP;

  // Other flows beside the first node that reaches them, stacked downwards without overlap.
  const flowX = MAIN_X + COLUMN_W + FLOW_GAP;
  let free = 0;
  for (const node of graph.nodes.filter((n) => n.kind === 'flow')) {
    const source = of(graph.edges.find((e) => e.to === node.id)!.from);
    const at = Math.max(source.y, free);
    boxes.set(node.id, {
      node,
      x: flowX,
      y: at,
      w: FLOW_W,
      h: FLOW_H,
      label: fit(node.label, FLOW_W - 2 * PAD),
      badges: [],
    });
    free = at + FLOW_H + 12;
    bottom = Math.max(bottom, at + FLOW_H);
  }

  const routes = graph.edges.map((edge) => route(edge, of(edge.from), of(edge.to)));
  const widest = Math.max(...[...boxes.values()].map((b) => b.x + b.w), MAIN_X + COLUMN_W);
  return { width: Math.ceil(widest + MARGIN), height: Math.ceil(bottom + MARGIN), boxes: [...boxes.values()], routes };
}

function route(edge: GraphEdge, from: Box, to: Box): Route {
  const word = EDGE_WORDS[edge.kind];
  if (edge.kind === 'fault') {
    // Along the rail on the left: any step of the column may fail into the handler.
    const [sx, sy] = left(from);
    const [tx, ty] = left(to);
    return {
      edge,
      points: [
        [sx, sy],
        [RAIL_X, sy],
        [RAIL_X, ty],
        [tx, ty],
      ],
      label: { text: word!, x: to.x, y: to.y - 6 },
    };
  }
  if (to.node.kind === 'flow') {
    const [sx, sy] = right(from);
    const [tx, ty] = left(to);
    const mid = sx + 24;
    const points: Array<readonly [number, number]> =
      sy === ty
        ? [
            [sx, sy],
            [tx, ty],
          ]
        : [
            [sx, sy],
            [mid, sy],
            [mid, ty],
            [tx, ty],
          ];
    return { edge, points, label: word === undefined ? undefined : { text: word, x: mid + 4, y: ty - 5 } };
  }
  // Down the column; the doors' edges bend and meet at the top of the first node.
  const sx = from.x + from.w / 2;
  const sy = from.y + from.h;
  const tx = to.x + to.w / 2;
  const ty = to.y;
  const bend = sy + (ty - sy) / 2;
  const points: Array<readonly [number, number]> =
    sx === tx
      ? [
          [sx, sy],
          [tx, ty],
        ]
      : [
          [sx, sy],
          [sx, bend],
          [tx, bend],
          [tx, ty],
        ];
  return { edge, points };
}

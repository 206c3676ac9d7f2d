/**
 * A flow graph as Mermaid (`flowchart TD`, which GitHub and most wikis draw) and as Graphviz DOT,
 * for a pull request or a page that cannot carry the SVG. Same nodes and edges as the SVG; every
 * label is escaped for its language, so a name or expression cannot end a string or add a node.
 */
import { flowPageHref } from './diagram-svg.js';
import { EDGE_WORDS, type FlowGraph, type GraphNode, type NodeKind } from './flow-graph.js';

/** A node's lines: its label, then its detail, then one line of badges. */
function lines(node: GraphNode): string[] {
  const out = [node.label];
  if (node.detail !== undefined) out.push(node.detail);
  if (node.badges.length > 0) out.push(node.badges.map((b) => `${b.kind} ${b.text}`.trim()).join(' · '));
  return out;
}

/** Mermaid's entity codes keep quotes, angle brackets, `#` and `&` from ending or shaping a label. */
function mermaidText(s: string): string {
  return s.replace(/[#"<>&]/g, (c) => `#${c.codePointAt(0)};`);
}

const MERMAID_SHAPE: Record<NodeKind, readonly [string, string]> = {
  door: ['([', '])'],
  guard: ['{{', '}}'],
  step: ['[', ']'],
  'fault-step': ['[', ']'],
  flow: ['[[', ']]'],
};

const CLASS_STYLE: Record<NodeKind, string> = {
  door: 'fill:#e8eefc,stroke:#7a8fc7',
  guard: 'fill:#fff7e0,stroke:#c9a43a',
  step: 'fill:#ffffff,stroke:#9aa4b8',
  'fault-step': 'fill:#fdf0f0,stroke:#d07a7a',
  flow: 'fill:#eef7ef,stroke:#6aa874',
};

export function diagramMermaid(graph: FlowGraph): string {
  const ids = new Map(graph.nodes.map((node, i) => [node.id, `n${i}`]));
  const out = [`flowchart TD`, `  %% ${mermaidText(`${graph.tenant}/${graph.flow}`)}`];
  for (const node of graph.nodes) {
    const [open, close] = MERMAID_SHAPE[node.kind];
    out.push(`  ${ids.get(node.id)}${open}"${lines(node).map(mermaidText).join('<br/>')}"${close}`);
  }
  for (const edge of graph.edges) {
    const word = EDGE_WORDS[edge.kind];
    const [from, to] = [ids.get(edge.from)!, ids.get(edge.to)!];
    if (edge.kind === 'fault') out.push(`  ${from} -. "${mermaidText(word!)}" .-> ${to}`);
    else out.push(word === undefined ? `  ${from} --> ${to}` : `  ${from} -- "${mermaidText(word)}" --> ${to}`);
  }
  for (const kind of Object.keys(CLASS_STYLE) as NodeKind[]) {
    const members = graph.nodes.filter((node) => node.kind === kind).map((node) => ids.get(node.id));
    if (members.length === 0) continue;
    const name = kind.replace('-', '_');
    out.push(`  classDef ${name} ${CLASS_STYLE[kind]}`, `  class ${members.join(',')} ${name}`);
  }
  return `${out.join('\n')}\n`;
}

/** A DOT string: backslashes and quotes escaped, new lines as `\n`. */
function dotString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}

const DOT_STYLE: Record<NodeKind, string> = {
  door: 'shape=box, style="rounded,filled", fillcolor="#e8eefc", color="#7a8fc7"',
  guard: 'shape=hexagon, style=filled, fillcolor="#fff7e0", color="#c9a43a"',
  step: 'shape=box, style="rounded,filled", fillcolor="#ffffff", color="#9aa4b8"',
  'fault-step': 'shape=box, style="rounded,filled", fillcolor="#fdf0f0", color="#d07a7a"',
  flow: 'shape=component, style=filled, fillcolor="#eef7ef", color="#6aa874"',
};

export function diagramDot(graph: FlowGraph): string {
  const out = [
    `digraph ${dotString(`${graph.tenant}/${graph.flow}`)} {`,
    '  rankdir=TB;',
    '  node [fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=10, color="#5b6475"];',
  ];
  for (const node of graph.nodes) {
    const url = node.flow === undefined ? '' : `, URL=${dotString(flowPageHref(graph.tenant, node.flow))}`;
    out.push(`  ${dotString(node.id)} [label=${dotString(lines(node).join('\n'))}, ${DOT_STYLE[node.kind]}${url}];`);
  }
  for (const edge of graph.edges) {
    const word = EDGE_WORDS[edge.kind];
    const attrs = [
      ...(word === undefined ? [] : [`label=${dotString(word)}`]),
      ...(edge.kind === 'fault' ? ['style=dashed', 'color="#b42318"', 'fontcolor="#b42318"'] : []),
    ];
    out.push(`  ${dotString(edge.from)} -> ${dotString(edge.to)}${attrs.length ? ` [${attrs.join(', ')}]` : ''};`);
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}

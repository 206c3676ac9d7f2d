/**
 * A deployed flow's picture (`svc flows show --format svg|mermaid|dot`, the UI's flow page): one
 * graph of the verified IR, drawn in the format asked for. The SVG is the UI's, byte for byte,
 * when the UI draws it without live numbers.
 */
import type { FlowIR } from '../../ir/types.js';
import type { ArtifactsStore, VersionListing } from '../../store/contracts/index.js';
import { diagramSvg, type DiagramNumbers } from '../diagram/diagram-svg.js';
import { diagramDot, diagramMermaid } from '../diagram/diagram-text.js';
import { flowGraph } from '../diagram/flow-graph.js';
import { shownVersion } from './flow-catalog.js';

export type { DiagramNumbers, StepNumbers } from '../diagram/diagram-svg.js';

export const DIAGRAM_FORMATS = ['svg', 'mermaid', 'dot'] as const;
export type DiagramFormat = (typeof DIAGRAM_FORMATS)[number];

/** A compiled flow drawn in `format`; live numbers are drawn on the SVG only. */
export function drawFlow(ir: FlowIR, format: DiagramFormat, numbers?: DiagramNumbers): string {
  const graph = flowGraph(ir);
  if (format === 'mermaid') return diagramMermaid(graph);
  if (format === 'dot') return diagramDot(graph);
  return diagramSvg(graph, numbers);
}

/**
 * The drawing of a flow's `version` (default: latest).
 * @throws as `shownVersion`: a bad name, an unknown flow or version, an unreadable artifact
 */
export async function flowDiagram(
  artifacts: ArtifactsStore,
  tenant: string,
  flow: string,
  version: string | undefined,
  format: DiagramFormat,
): Promise<{ readonly shown: VersionListing; readonly drawing: string }> {
  const { shown, ir } = await shownVersion(artifacts, tenant, flow, version);
  return { shown, drawing: drawFlow(ir, format) };
}

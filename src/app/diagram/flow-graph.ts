/**
 * A compiled flow as a graph a person reads: the doors it answers, the checks before its first
 * step (dedup, correlation), its steps in order with their constructs and effects as badges, the
 * flows it calls or publishes to, and its fault handler as a branch of its own. Pure: the SVG,
 * Mermaid and DOT drawings (`diagram-svg.ts`, `diagram-text.ts`) all read this one graph.
 */
import type { FlowIR, StepIR } from '../../ir/types.js';
import { doorsOf, type DoorName } from '../use-cases/flow-catalog.js';

/** What a node stands for; the drawings style each kind alike. */
export type NodeKind = 'door' | 'guard' | 'step' | 'fault-step' | 'flow';

/** What an edge means: the order of steps, a failure's way into the handler, or a link to another flow. */
export type EdgeKind = 'next' | 'fault' | 'calls' | 'publishes' | 'splits' | 'forks' | 'closes' | 'on-timeout';

/** The words an edge carries in every drawing (the order of steps carries none). */
export const EDGE_WORDS: Partial<Record<EdgeKind, string>> = {
  fault: 'when a step fails',
  calls: 'calls',
  publishes: 'publishes to',
  splits: 'splits into',
  forks: 'forks',
  closes: 'closes',
  'on-timeout': 'on timeout',
};

export interface Badge {
  /** The construct or effect: `validate`, `condition`, `ntd`, `http_egress`, `queue_publish`, ... */
  readonly kind: string;
  /** What a reader needs beside the kind: a rule count, a host, a target flow. */
  readonly text: string;
}

export interface GraphNode {
  /** Unique within the graph and stable across versions: `door:http`, `step:check`, `flow:price-line`. */
  readonly id: string;
  readonly kind: NodeKind;
  readonly label: string;
  /** A second line: a door's route or schedule, a guard's keys. */
  readonly detail?: string;
  readonly badges: readonly Badge[];
  /** The step name live numbers are counted under (steps and fault steps only). */
  readonly step?: string;
  /** The door live numbers are counted under (doors only). */
  readonly door?: DoorName;
  /** Another flow of the tenant (kind `flow`): the drawings link to its page. */
  readonly flow?: string;
}

export interface GraphEdge {
  readonly from: string;
  readonly to: string;
  readonly kind: EdgeKind;
}

export interface FlowGraph {
  readonly tenant: string;
  readonly flow: string;
  /** Doors, then the guard (if any), then the steps in order, then the fault branch, then other flows. */
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
}

/** The short label of each door (the catalogue's `doorsOf` decides which a flow answers). */
function doorNode(ir: FlowIR, door: DoorName): GraphNode {
  const base = { id: `door:${door}`, kind: 'door' as const, badges: [], door };
  switch (door) {
    case 'http':
      return { ...base, label: 'POST /run', detail: 'JSON, XML, SOAP' };
    case 'queue':
      return { ...base, label: 'POST /enqueue', detail: `up to ${ir.queue.maxAttempts} attempts` };
    case 'soap':
      return { ...base, label: `SOAP ${ir.soap!.operation}`, detail: 'WSDL served' };
    case 'grpc':
      return { ...base, label: 'gRPC', detail: ir.grpcMethod ?? 'method named like the flow' };
    case 'cron':
      return { ...base, label: 'cron (UTC)', detail: ir.schedule!.trim() };
  }
}

/** Dedup and correlation run before the first step: one node says which keys they read. */
function guardNode(ir: FlowIR): GraphNode | undefined {
  const badges: Badge[] = [];
  if (ir.dedup !== undefined) {
    const window = ir.dedup.windowHours === undefined ? '' : `, ${ir.dedup.windowHours} h`;
    badges.push({ kind: 'dedup', text: `${ir.dedup.key}${window}` });
  }
  const c = ir.correlation;
  if (c?.kind === 'open') badges.push({ kind: 'correlation open', text: `${c.key}, ${c.deadlineSecs} s` });
  if (c?.kind === 'close') badges.push({ kind: 'correlation close', text: c.key });
  if (badges.length === 0) return undefined;
  return { id: 'guard', kind: 'guard', label: 'before the first step', badges };
}

/**
 * The host an endpoint names (never its user or password), or the template or variable it starts
 * with when the host is known only at run time.
 */
export function endpointHost(endpoint: string): string {
  const template = /^(\{\{.*?\}\}|\$\{[^}]*\})/.exec(endpoint);
  if (template !== null) return template[1]!;
  const [, scheme = '', authority = ''] = /^([a-z][a-z0-9+.-]*:\/\/)?([^/?#]*)/i.exec(endpoint)!;
  const host = authority.replace(/^.*@/, '');
  return /[{}$]/.test(host) ? `${scheme}${host}` : host;
}

function stepBadges(step: StepIR): Badge[] {
  const badges: Badge[] = [];
  const add = (kind: string, text = ''): void => void badges.push({ kind, text });
  if (step.use !== undefined) add('use', step.use);
  if (step.restoreBody !== undefined) add('restore_body', step.restoreBody);
  if (step.validate.length > 0) add('validate', `${step.validate.length} rule${step.validate.length === 1 ? '' : 's'}`);
  if (step.condition !== undefined) add('condition');
  if (step.foreach !== undefined) add('foreach', step.foreach);
  if (step.split !== undefined) add('split', step.split);
  if (step.fork !== undefined) add('fork', `${step.fork.length} flows`);
  if (step.callFlow !== undefined) add('call_flow', step.callFlow);
  if (step.ntd !== undefined) add('ntd', step.ntd.format);
  if (step.secretKey !== undefined) add('secret_read', step.secretKey);
  if (step.http !== undefined) {
    const h = step.http;
    const soap =
      h.soapVersion === undefined ? '' : ` (SOAP ${h.soapVersion}${h.soapOperation ? ` ${h.soapOperation}` : ''})`;
    add('http_egress', `${h.method} ${endpointHost(h.endpoint)}${soap}`);
    if (h.oauth2 !== undefined) add('oauth2');
    else if (h.bearerToken !== undefined) add('bearer_token');
    if (h.tlsClientCert !== undefined) add('tls client certificate');
  }
  if (step.queue !== undefined) add('queue_publish', step.queue);
  const setCtx = Object.keys(step.setCtx);
  if (setCtx.length > 0) add('set_ctx', setCtx.join(', '));
  if (step.responseStatus !== undefined) add('response_status');
  const headers = Object.keys(step.responseHeaders);
  if (headers.length > 0) add('response_header', headers.join(', '));
  if (step.snapshot !== undefined) add('snapshot', step.snapshot);
  return badges;
}

function stepNode(step: StepIR, kind: 'step' | 'fault-step'): GraphNode {
  return { id: `step:${step.name}`, kind, label: step.name, badges: stepBadges(step), step: step.name };
}

/** The other flows a step reaches, with how. */
function stepLinks(step: StepIR): Array<{ flow: string; kind: EdgeKind }> {
  const links: Array<{ flow: string; kind: EdgeKind }> = [];
  if (step.callFlow !== undefined) links.push({ flow: step.callFlow, kind: step.split ? 'splits' : 'calls' });
  for (const f of step.fork ?? []) links.push({ flow: f, kind: 'forks' });
  if (step.queue !== undefined) links.push({ flow: step.queue, kind: 'publishes' });
  return links;
}

export function flowGraph(ir: FlowIR): FlowGraph {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const others = new Map<string, GraphNode>();
  const linkTo = (from: string, flow: string, kind: EdgeKind): void => {
    if (!others.has(flow)) others.set(flow, { id: `flow:${flow}`, kind: 'flow', label: flow, badges: [], flow });
    edges.push({ from, to: `flow:${flow}`, kind });
  };

  const doors = doorsOf(ir).map((d) => doorNode(ir, d.door));
  nodes.push(...doors);
  const guard = guardNode(ir);
  const main = ir.steps.map((s) => stepNode(s, 'step'));
  const column = guard === undefined ? main : [guard, ...main];
  nodes.push(...column);
  const first = column[0];
  if (first !== undefined) for (const d of doors) edges.push({ from: d.id, to: first.id, kind: 'next' });
  for (let i = 1; i < column.length; i++) edges.push({ from: column[i - 1]!.id, to: column[i]!.id, kind: 'next' });
  if (ir.correlation?.kind === 'close') linkTo('guard', ir.correlation.closes, 'closes');
  if (ir.correlation?.kind === 'open' && ir.correlation.onTimeout !== undefined)
    linkTo('guard', ir.correlation.onTimeout, 'on-timeout');
  for (const s of ir.steps) for (const l of stepLinks(s)) linkTo(`step:${s.name}`, l.flow, l.kind);

  // The fault section's name is its first step's: the branch starts there.
  if (ir.fault !== undefined) {
    const steps = ir.fault.steps.map((s) => stepNode(s, 'fault-step'));
    nodes.push(...steps);
    if (main.length > 0 && steps.length > 0) edges.push({ from: main[0]!.id, to: steps[0]!.id, kind: 'fault' });
    for (let i = 1; i < steps.length; i++) edges.push({ from: steps[i - 1]!.id, to: steps[i]!.id, kind: 'next' });
    for (const s of ir.fault.steps) for (const l of stepLinks(s)) linkTo(`step:${s.name}`, l.flow, l.kind);
  }
  nodes.push(...others.values());
  return { tenant: ir.tenant, flow: ir.flow, nodes, edges };
}

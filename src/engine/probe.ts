/**
 * Where an execution can go, named as points a probe is told of (`svc test --coverage`): a step
 * entered, each validate rule refusing, a condition's two outcomes, a foreach or split over an
 * empty list or over items. The engine reports the points it reaches; `pointsOf` lists every point
 * a flow has, so coverage is what was listed and never reported. One list, read by both.
 */
import type { FlowIR, StepIR } from '../ir/types.js';

export type ProbePoint =
  | 'entered'
  | `refused:${number}`
  | 'condition:true'
  | 'condition:false'
  | 'foreach:empty'
  | 'foreach:items'
  | 'split:empty'
  | 'split:items';

/** Told of each point an execution reaches; absent on the service's doors (nothing is called then). */
export type ExecutionProbe = (ir: FlowIR, step: string, point: ProbePoint) => void;

/** One point of a flow: the step (in the fault section or not) and what happened there. */
export interface FlowPoint {
  readonly step: string;
  readonly fault: boolean;
  readonly point: ProbePoint;
  /** For a refusal: the rule's message. */
  readonly rule?: string;
}

/** Every point of `ir`, steps in file order, the fault section's last. */
export function pointsOf(ir: FlowIR): FlowPoint[] {
  const out: FlowPoint[] = [];
  const add = (step: StepIR, fault: boolean): void => {
    out.push({ step: step.name, fault, point: 'entered' });
    for (const rule of step.validate)
      out.push({ step: step.name, fault, point: `refused:${rule.line}`, rule: rule.message });
    if (step.condition !== undefined) {
      out.push({ step: step.name, fault, point: 'condition:true' });
      out.push({ step: step.name, fault, point: 'condition:false' });
    }
    for (const kind of ['foreach', 'split'] as const) {
      if (step[kind] === undefined) continue;
      out.push({ step: step.name, fault, point: `${kind}:empty` });
      out.push({ step: step.name, fault, point: `${kind}:items` });
    }
  };
  for (const step of ir.steps) add(step, false);
  for (const step of ir.fault?.steps ?? []) add(step, true);
  return out;
}

/** Prepares a FlowIR for execution: compiles its expressions once into step programs, cached by the IR object. */
import { FlowDefectError } from '../common/errors.js';
import { MaskSet } from '../common/mask.js';
import { compileExpr, type CompiledExpr } from '../expr/cel.js';
import { compileNtd, type CompiledNtd } from '../expr/ntd.js';
import { compileTemplate, type CompiledTemplate } from '../expr/template.js';
import type { EffectName, FlowIR, StepIR, ValidateRuleIR } from '../ir/types.js';

export interface CompiledRule {
  readonly rule: ValidateRuleIR;
  readonly test: CompiledExpr;
}

export interface CompiledStep {
  readonly step: StepIR;
  readonly validate: readonly CompiledRule[];
  readonly condition: CompiledExpr | undefined;
  readonly ntd: CompiledNtd | undefined;
  readonly foreach: CompiledExpr | undefined;
  readonly split: CompiledExpr | undefined;
  /** Effects in the order the step lists them. */
  readonly effects: readonly EffectName[];
  readonly responseStatus: CompiledTemplate | undefined;
  readonly responseHeaders: ReadonlyArray<readonly [string, CompiledTemplate]>;
  readonly setCtx: ReadonlyArray<readonly [string, CompiledTemplate]>;
  /** A plain http_egress step: `egress_traced` covers it, so no `step_traced` row. */
  readonly plainEgress: boolean;
  /** The step does nothing that can suspend: no effect and no composition. */
  readonly sync: boolean;
}

export interface PreparedFlow {
  readonly ir: FlowIR;
  readonly steps: readonly CompiledStep[];
  readonly fault: readonly CompiledStep[] | undefined;
  readonly mask: MaskSet;
  /** Backend response headers passed back to the caller (lowercase). */
  readonly passHeaders: readonly string[];
  /** Whether an execution can observe `ctx.headers` (see `mayReadHeaders`); if not, the door need not build it. */
  readonly readsHeaders: boolean;
}

const cache = new WeakMap<FlowIR, PreparedFlow>();

/** `ctx` used other than as `ctx.<field>`: the whole context, or an index into it. */
const WHOLE_CTX = /\bctx\b(?!\s*\.\s*[A-Za-z_])/;

/**
 * Whether an execution of `ir` can observe `ctx.headers`: some expression or template (steps, fault
 * section, dedup and correlation keys) mentions `headers` or uses `ctx` whole, or the flow runs
 * other flows (call_flow, fork), which share the execution's headers. Conservative by design: a
 * false "yes" only costs building the map, which is all a door saves on a "no" (measured: 3% of
 * the request path of a flow that never reads them).
 */
function mayReadHeaders(ir: FlowIR): boolean {
  const text = JSON.stringify(ir);
  const runsOthers = [...ir.steps, ...(ir.fault?.steps ?? [])].some(
    (s) => s.callFlow !== undefined || s.fork !== undefined,
  );
  return runsOthers || text.includes('headers') || WHOLE_CTX.test(text);
}

const masks = new WeakMap<FlowIR, MaskSet>();

/**
 * The flow's log mask (the global list plus its `log_extra_mask_fields`), for every row that carries
 * a payload of the flow. Unlike `prepareFlow` it never throws: a flow whose expressions do not
 * compile still has its fields masked.
 */
export function maskOf(ir: FlowIR): MaskSet {
  const prepared = cache.get(ir);
  if (prepared !== undefined) return prepared.mask;
  let mask = masks.get(ir);
  if (mask === undefined) masks.set(ir, (mask = new MaskSet(ir.logExtraMaskFields)));
  return mask;
}

/** True unless `ir` certainly never reads `ctx.headers` (see `mayReadHeaders`). */
export function flowReadsHeaders(ir: FlowIR): boolean {
  return prepareFlow(ir).readsHeaders;
}

/**
 * The compiled form of `ir` (compiled on first use, then shared by every execution of that object).
 * @throws FlowDefectError naming the step when an expression does not compile
 */
export function prepareFlow(ir: FlowIR): PreparedFlow {
  const hit = cache.get(ir);
  if (hit !== undefined) return hit;
  const compiled: PreparedFlow = Object.freeze({
    ir,
    steps: Object.freeze(ir.steps.map(compileStep)),
    fault: ir.fault === undefined ? undefined : Object.freeze(ir.fault.steps.map(compileStep)),
    mask: maskOf(ir),
    passHeaders: Object.freeze(ir.responseHeaders.map((h) => h.toLowerCase())),
    readsHeaders: mayReadHeaders(ir),
  });
  cache.set(ir, compiled);
  return compiled;
}

function compileStep(step: StepIR): CompiledStep {
  const at = (what: string, fn: () => unknown): never | unknown => {
    try {
      return fn();
    } catch (err) {
      throw new FlowDefectError(
        step.name,
        `step '${step.name}' (line ${step.line}): ${what} does not compile: ${(err as Error).message}`,
        err,
      );
    }
  };
  const effects = step.effects.slice();
  const composes =
    step.callFlow !== undefined || step.fork !== undefined || step.foreach !== undefined || step.split !== undefined;
  return Object.freeze({
    step,
    validate: step.validate.map((rule) => ({
      rule,
      test: at(`validate rule on line ${rule.line}`, () => compileExpr(rule.expr)) as CompiledExpr,
    })),
    condition:
      step.condition === undefined ? undefined : (at('condition', () => compileExpr(step.condition!)) as CompiledExpr),
    ntd: step.ntd === undefined ? undefined : (at('ntd', () => compileNtd(step.ntd!)) as CompiledNtd),
    foreach:
      step.foreach === undefined
        ? undefined
        : (at('foreach', () => compileExpr(unwrapHole(step.foreach!))) as CompiledExpr),
    split:
      step.split === undefined ? undefined : (at('split', () => compileExpr(unwrapHole(step.split!))) as CompiledExpr),
    effects,
    responseStatus:
      step.responseStatus === undefined
        ? undefined
        : (at('response_status', () => compileTemplate(step.responseStatus!)) as CompiledTemplate),
    responseHeaders: Object.entries(step.responseHeaders).map(
      ([name, t]) =>
        [name.toLowerCase(), at(`response_header_${name}`, () => compileTemplate(t)) as CompiledTemplate] as const,
    ),
    setCtx: Object.entries(step.setCtx).map(
      ([key, t]) => [key, at(`set_ctx.${key}`, () => compileTemplate(t)) as CompiledTemplate] as const,
    ),
    plainEgress: effects.includes('http_egress') && step.restoreBody === undefined,
    sync: effects.length === 0 && !composes,
  });
}

/** Expression keys accept `expr` or `"{{ expr }}"` (flow-format.md); the compiler may leave either. */
function unwrapHole(src: string): string {
  const m = /^\s*\{\{([\s\S]*)\}\}\s*$/.exec(src);
  return m === null || m[1]!.includes('}}') ? src : m[1]!;
}

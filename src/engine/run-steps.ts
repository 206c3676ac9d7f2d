/** Runs a sequence of compiled steps, each as flow-format.md "What a step does, in order" says. */
import {
  EgressError,
  ExpressionError,
  FlowDefectError,
  FlowTimeoutError,
  SvcError,
  ValidationRejectedError,
} from '../common/errors.js';
import { JSON_MAX_DEPTH, valueNestsDeeperThan } from '../common/json-depth.js';
import { isXmlValue } from '../common/xml-value.js';
import type { TraceSpan } from '../common/trace-context/spans.js';
import type { EffectName } from '../ir/types.js';
import type { CompiledStep } from './prepare.js';
import type { FlowRun } from './execution.js';
import { secretRead } from './effects/secret-read.js';
import type { Awaitable } from '../common/awaitable.js';
import type { EffectHandler, FlowContext } from './types.js';

export interface StepsOutcome {
  output: unknown;
  /** A condition was false: the sequence ended early. */
  stopped: boolean;
}

/**
 * Runs `steps` in order on `input`; the last step's output is the sequence's output. Steps run
 * synchronously up to the first one that must wait (an effect, a composition, a recorded span):
 * a sequence of validate, condition and ntd steps answers its outcome itself, with no promise and
 * no microtask (measured on /run: each async layer of an execution cost a promise, its frame and a
 * turn of the microtask queue). From that step on the sequence continues asynchronously.
 * @param checkDeadline check `flow_max_duration_secs` before each step (not in the fault section)
 */
export function runSteps(
  run: FlowRun,
  steps: readonly CompiledStep[],
  input: unknown,
  checkDeadline: boolean,
): Awaitable<StepsOutcome> {
  // One clock reading per step boundary: a step's end is the next one's start.
  return stepsFrom(run, steps, 0, input, checkDeadline, run.exec.stepTimer === undefined ? 0 : performance.now());
}

/**
 * The sequence from step `from` on, `mark` being the clock at that step's start: synchronously up
 * to a step that must wait, which waitingStep runs before handing the rest back here.
 */
function stepsFrom(
  run: FlowRun,
  steps: readonly CompiledStep[],
  from: number,
  input: unknown,
  checkDeadline: boolean,
  mark: number,
): Awaitable<StepsOutcome> {
  const timer = run.exec.stepTimer;
  let current = input;
  for (let i = from; i < steps.length; i++) {
    const cs = steps[i]!;
    beforeStep(run, cs, i, checkDeadline);
    // Step spans only when an SDK records them: without one nothing would see them.
    if (!cs.sync || run.parentSpan.sdk) return waitingStep(run, steps, i, current, checkDeadline, mark);
    let out: unknown;
    try {
      out = runSyncStep(run, cs, current);
    } catch (err) {
      timer?.(run.flow.ir, cs.step.name, performance.now() - mark, true);
      throw err;
    }
    if (timer !== undefined) mark = stepTimed(run, cs, mark);
    if (out === STOP) return { output: run.ctx.input, stopped: true };
    current = out;
  }
  return { output: current, stopped: false };
}

/** Step `i`, which must wait (or is recorded in a span), then the rest of the sequence. */
async function waitingStep(
  run: FlowRun,
  steps: readonly CompiledStep[],
  i: number,
  input: unknown,
  checkDeadline: boolean,
  mark: number,
): Promise<StepsOutcome> {
  const cs = steps[i]!;
  let out: unknown;
  try {
    out = run.parentSpan.sdk ? await runSpanned(run, cs, input) : await runStep(run, cs, input);
  } catch (err) {
    run.exec.stepTimer?.(run.flow.ir, cs.step.name, performance.now() - mark, true);
    throw err;
  }
  const next = run.exec.stepTimer === undefined ? mark : stepTimed(run, cs, mark);
  if (out === STOP) return { output: run.ctx.input, stopped: true };
  return stepsFrom(run, steps, i + 1, out, checkDeadline, next);
}

/** Before step `i`: it becomes the current step, and the time limit is checked (never before the first). */
function beforeStep(run: FlowRun, cs: CompiledStep, i: number, checkDeadline: boolean): void {
  run.currentStep = cs.step.name;
  const exec = run.exec;
  if (checkDeadline && i > 0 && exec.now() - exec.startedMs > exec.limitSecs * 1000) {
    throw new FlowTimeoutError(cs.step.name, exec.limitSecs);
  }
}

/** Tells the step timer a step ended well; @returns the clock reading, the next step's start */
function stepTimed(run: FlowRun, cs: CompiledStep, mark: number): number {
  const end = performance.now();
  run.exec.stepTimer!(run.flow.ir, cs.step.name, end - mark, false);
  return end;
}

const STOP = Symbol('stop');

/** One step inside its span (a child of the run's parent span), ended with the step's outcome. */
async function runSpanned(run: FlowRun, cs: CompiledStep, input: unknown): Promise<unknown> {
  const ir = run.flow.ir;
  const span: TraceSpan = run.parentSpan.child(`step ${cs.step.name}`, 'internal', {
    'svc.tenant': ir.tenant,
    'svc.flow': ir.flow,
    'svc.step': cs.step.name,
  });
  run.stepSpan = span;
  try {
    const out = cs.sync ? runSyncStep(run, cs, input) : await runStep(run, cs, input);
    span.setAttribute('svc.outcome', out === STOP ? 'stopped' : 'ok');
    span.end();
    return out;
  } catch (err) {
    span.setAttribute('svc.outcome', 'failed');
    span.end(err);
    throw err;
  } finally {
    run.stepSpan = run.parentSpan;
  }
}

/** Steps 1-3: restore_body, validate, condition. Returns STOP when the condition is false. */
function enter(run: FlowRun, cs: CompiledStep, input: unknown): typeof STOP | undefined {
  const { step } = cs;
  const ctx = run.ctx;
  const probe = run.exec.probe;
  if (probe !== undefined) probe(run.flow.ir, step.name, 'entered');
  let current = input;
  if (step.restoreBody !== undefined) {
    if (run.snapshots === undefined || !run.snapshots.has(step.restoreBody)) {
      throw new FlowDefectError(
        step.name,
        `step '${step.name}': restore_body '${step.restoreBody}' names no snapshot taken earlier in this execution`,
      );
    }
    current = run.snapshots.get(step.restoreBody);
  }
  if (step.snapshot !== undefined) (run.snapshots ??= new Map()).set(step.snapshot, current);
  ctx.input = current;
  for (const { rule, test } of cs.validate) {
    const ok = evaluate(step.name, `validate rule on line ${rule.line}`, () => test(ctx));
    if (ok === true) continue;
    if (ok === false && probe !== undefined) probe(run.flow.ir, step.name, `refused:${rule.line}`);
    if (ok === false) throw new ValidationRejectedError(rule.kind, rule.message, step.name);
    throw new ExpressionError(
      step.name,
      `step '${step.name}': validate rule on line ${rule.line} gave ${typeName(ok)}, not a bool`,
    );
  }
  if (cs.condition !== undefined) {
    const go = evaluate(step.name, 'condition', () => cs.condition!(ctx));
    if (probe !== undefined && typeof go === 'boolean') probe(run.flow.ir, step.name, `condition:${go}`);
    if (go === false) return STOP;
    if (go !== true)
      throw new ExpressionError(step.name, `step '${step.name}': condition gave ${typeName(go)}, not a bool`);
  }
  return undefined;
}

/** A step without effect or composition: no promise, no await (the common validate + ntd case). */
function runSyncStep(run: FlowRun, cs: CompiledStep, input: unknown): unknown {
  if (enter(run, cs, input) === STOP) return STOP;
  const ctx = run.ctx;
  const output = cs.ntd === undefined ? ctx.input : evaluate(cs.step.name, 'ntd', () => cs.ntd!(ctx));
  leave(run, cs, output);
  return output;
}

/**
 * Every value a step makes (its ntd message, its output, a set_ctx value, a foreach or split list)
 * nests at most JSON_MAX_DEPTH levels, like every body the service accepts: no answer, log payload
 * or queue record could hold a deeper one, and the walks over context values (the expression
 * evaluator, protobufjs, JSON.stringify) recurse. So a deeper value fails the step here, naming it,
 * before anything walks it, and steps can never build one up level by level. The check is one
 * iterative walk, skipped for a value passed through unchanged.
 */
function bounded<T>(step: string, what: string, value: T): T {
  if (valueNestsDeeperThan(value))
    throw new FlowDefectError(
      step,
      `step '${step}': ${what} nests deeper than ${JSON_MAX_DEPTH} levels, the limit for JSON values`,
    );
  return value;
}

/** A step's ntd message, checked by `bounded`. */
function ntdMessage(step: string, ntd: (ctx: FlowContext) => unknown, ctx: FlowContext): unknown {
  return bounded(
    step,
    'the ntd message',
    evaluate(step, 'ntd', () => ntd(ctx)),
  );
}

async function runStep(run: FlowRun, cs: CompiledStep, input: unknown): Promise<unknown> {
  if (enter(run, cs, input) === STOP) return STOP;
  const { step } = cs;
  const ctx = run.ctx;
  let output: unknown;
  let sent: unknown;
  if (cs.foreach !== undefined) {
    const list = bounded(step.name, 'the foreach list', listOf(cs, 'foreach', cs.foreach(ctx)));
    reached(run, step.name, 'foreach', list);
    const results: unknown[] = [];
    for (let i = 0; i < list.length; i++) {
      ctx.item = list[i];
      ctx.index = i;
      trace(run, `foreach[${i}]`, list[i]);
      const message = cs.ntd === undefined ? list[i] : ntdMessage(step.name, cs.ntd, ctx);
      results.push(await act(run, cs, message, ctx));
    }
    delete ctx.item;
    delete ctx.index;
    output = results;
  } else if (cs.split !== undefined) {
    const list = bounded(step.name, 'the split list', listOf(cs, 'split', cs.split(ctx)));
    reached(run, step.name, 'split', list);
    // Each branch gets its own shallow context so concurrent branches never see another's item.
    const branches = list.map((item, index) => {
      const bctx: FlowContext = { ...ctx, item, index };
      const message = cs.ntd === undefined ? item : ntdMessage(step.name, cs.ntd, bctx);
      return { bctx, message, label: `split[${index}]` };
    });
    output = await pool(branches.length, run.exec.splitConcurrency, (i) =>
      act(run, cs, branches[i]!.message, branches[i]!.bctx, branches[i]!.label),
    );
  } else {
    sent = cs.ntd === undefined ? ctx.input : ntdMessage(step.name, cs.ntd, ctx);
    output = await act(run, cs, sent, ctx);
  }
  leave(run, cs, output, sent);
  return output;
}

/** Tells the probe, if any, whether a foreach or split ran over items or over an empty list. */
function reached(run: FlowRun, step: string, kind: 'foreach' | 'split', list: readonly unknown[]): void {
  const probe = run.exec.probe;
  if (probe !== undefined) probe(run.flow.ir, step, list.length === 0 ? `${kind}:empty` : `${kind}:items`);
}

/** Step 5: the effects in order, then call_flow or fork. Without any, the message is the output. */
async function act(
  run: FlowRun,
  cs: CompiledStep,
  message: unknown,
  ctx: FlowContext,
  label?: string,
): Promise<unknown> {
  const { step } = cs;
  // A split branch's entry row: the called flow writes it when there is one.
  if (label !== undefined && step.callFlow === undefined) trace(run, label, message);
  let m = message;
  for (const name of cs.effects) m = await effect(run, cs, name, m, ctx);
  // The called flow's entry row: its split branch label, else `call_flow`.
  if (step.callFlow !== undefined) m = await run.exec.runChild(run, step.callFlow, m, label ?? 'call_flow');
  if (step.fork !== undefined) {
    const names = step.fork;
    const msg = m;
    const outputs = await Promise.all(names.map((name, i) => run.exec.runChild(run, name, msg, `fork[${i}]`)));
    const out: Record<string, unknown> = {};
    names.forEach((name, i) => (out[name] = outputs[i]));
    m = out;
  }
  return m;
}

async function effect(
  run: FlowRun,
  cs: CompiledStep,
  name: EffectName,
  message: unknown,
  ctx: FlowContext,
): Promise<unknown> {
  const { step } = cs;
  const exec = run.exec;
  const handler: EffectHandler | undefined = exec.effects[name] ?? (name === 'secret_read' ? secretRead : undefined);
  if (handler === undefined) {
    throw new FlowDefectError(
      step.name,
      `step '${step.name}' uses effect '${name}', but this process has no handler for it`,
    );
  }
  let result;
  try {
    result = await handler({
      ir: run.flow.ir,
      step,
      message,
      ctx,
      correlationId: exec.correlationId,
      trace: exec.trace,
      events: exec.events,
      mask: run.flow.mask,
      env: exec.env,
      span: run.stepSpan,
    });
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw new EgressError(
      step.name,
      `step '${step.name}': ${name} failed: ${(err as Error)?.message ?? String(err)}`,
      err,
    );
  }
  if (result.status !== undefined) {
    const headers = result.headers ?? {};
    ctx.response = { status: result.status, headers };
    for (const h of run.flow.passHeaders) {
      const v = headers[h];
      if (v !== undefined) run.headers[h] = v;
    }
  }
  return result.output;
}

/** Step 6: the output's nesting, response_status, response_header_<name>, set_ctx; then the trace row. */
function leave(run: FlowRun, cs: CompiledStep, output: unknown, message?: unknown): void {
  const { step } = cs;
  const ctx = run.ctx;
  // The input or the message passed through unchanged was checked where it was made.
  if (output !== ctx.input && output !== message) bounded(step.name, 'its output', output);
  if (cs.responseStatus !== undefined || cs.responseHeaders.length > 0 || cs.setCtx.length > 0) {
    ctx.output = output;
    if (cs.responseStatus !== undefined)
      run.status = toStatus(
        step.name,
        evaluate(step.name, 'response_status', () => cs.responseStatus!.render(ctx)),
      );
    for (const [name, t] of cs.responseHeaders)
      run.headers[name] = headerValue(
        step.name,
        name,
        toText(evaluate(step.name, `response_header ${name}`, () => t.render(ctx))),
      );
    for (const [key, t] of cs.setCtx)
      ctx[key] = bounded(
        step.name,
        `set_ctx.${key}`,
        evaluate(step.name, `set_ctx.${key}`, () => t.render(ctx)),
      );
  }
  if (run.exec.trace && !cs.plainEgress) trace(run, step.name, output);
}

/** Emits a `step_traced` row (only called while tracing is on, or for an entry label). */
export function trace(run: FlowRun, step: string, payload: unknown): void {
  const exec = run.exec;
  if (!exec.trace) return;
  const ir = run.flow.ir;
  exec.events.emit({
    event: 'step_traced',
    correlation_id: exec.correlationId,
    tenant: ir.tenant,
    flow: ir.flow,
    step,
    payload,
    logLevel: 'full',
    mask: run.flow.mask,
    trace_id: exec.span.traceId,
  });
}

function evaluate<T>(step: string, what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw new ExpressionError(step, `step '${step}': ${what} failed: ${(err as Error)?.message ?? String(err)}`, err);
  }
}

function listOf(cs: CompiledStep, key: string, value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  throw new FlowDefectError(cs.step.name, `step '${cs.step.name}': ${key} gave ${typeName(value)}, not a list`);
}

function toStatus(step: string, value: unknown): number {
  const n = typeof value === 'string' && /^\s*\d{3}\s*$/.test(value) ? Number(value) : value;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 100 && n <= 599) return n;
  throw new FlowDefectError(
    step,
    `step '${step}': response_status gave ${JSON.stringify(value)}, not an HTTP status 100-599`,
  );
}

/** What an HTTP field value may hold (RFC 9110: visible ASCII, space, tab, obs-text); Node refuses the rest. */
const NOT_IN_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

function headerValue(step: string, name: string, value: string): string {
  if (!NOT_IN_HEADER_VALUE.test(value)) return value;
  throw new FlowDefectError(
    step,
    `step '${step}': response_header ${name} gave a value with a line break or control character, which no HTTP header can carry; strip or encode it in the template`,
  );
}

function toText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (isXmlValue(v)) return v.xml;
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a map' : `${typeof v} ${JSON.stringify(v)}`;
}

/** Runs `count` tasks with at most `limit` in flight; results in task order. */
async function pool<T>(count: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < count) {
      const i = next++;
      try {
        results[i] = await task(i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  return results;
}

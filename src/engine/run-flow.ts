/** runFlow: one execution of a compiled flow, with its fault handler, time limit and composition. */
import {
  FaultHandlerFailedError,
  FlowDefectError,
  FlowError,
  FlowTimeoutError,
  IntegrityError,
  StorageUnavailableError,
  SvcError,
} from '../common/errors.js';
import type { FlowIR } from '../ir/types.js';
import type { TraceSpan } from '../common/trace-context/spans.js';
import { prepareFlow, type PreparedFlow } from './prepare.js';
import { makeContext, makeExecution, type Execution, type FlowRun } from './execution.js';
import { runSteps, trace, type StepsOutcome } from './run-steps.js';
import type { Awaitable } from '../common/awaitable.js';
import { faultInputOf } from './fault-input.js';
import type { FlowContext, FlowResult, RunDeps, RunOptions } from './types.js';

/**
 * Runs `ir` on `input`. The execution keeps this IR to its end (a newer deploy does not affect it)
 * and is never cancelled. Failures are thrown as SvcError subclasses carrying status and body:
 * ValidationRejectedError (400/422), FlowDefectError (500), EgressError (502),
 * FaultHandlerFailedError (500), FlowTimeoutError (500), IntegrityError / StorageUnavailableError
 * from `deps.loadFlow`.
 */
export async function runFlow(ir: FlowIR, input: unknown, opts: RunOptions, deps: RunDeps = {}): Promise<FlowResult> {
  return runFlowNow(ir, input, opts, deps);
}

/**
 * runFlow for a caller that can take its result at once: the FlowResult itself when every step ran
 * without waiting (see runSteps), else a promise of it. A failure always comes as a rejected
 * promise, never thrown from the call. The executor's synchronous doors use it: a flow of
 * validate and ntd steps is answered in the turn its body arrived in.
 */
export function runFlowNow(ir: FlowIR, input: unknown, opts: RunOptions, deps: RunDeps = {}): Awaitable<FlowResult> {
  try {
    const exec = makeExecution(opts, deps, runChild);
    return executeFlow(exec, prepareFlow(ir), input, 0, opts.config, opts.entryLabel, exec.span);
  } catch (err) {
    return Promise.reject(err as Error);
  }
}

/** The SOAP fault fields a flow wrote into its context, if any. */
function soapFaultOf(ctx: FlowContext): { code?: string; string?: string } | undefined {
  const code = ctx.soap_fault_code;
  const text = ctx.soap_fault_string;
  if (code === undefined && text === undefined) return undefined;
  return {
    ...(code !== undefined ? { code: String(code) } : {}),
    ...(text !== undefined ? { string: String(text) } : {}),
  };
}

/** One flow's execution (the top one or a composed child); at once when its steps ran without waiting. */
function executeFlow(
  exec: Execution,
  flow: PreparedFlow,
  input: unknown,
  depth: number,
  config: Record<string, string> | undefined,
  entryLabel: string | undefined,
  parentSpan: TraceSpan,
): Awaitable<FlowResult> {
  const run: FlowRun = {
    exec,
    flow,
    ctx: makeContext(exec, flow, input, config),
    depth,
    status: undefined,
    headers: {},
    snapshots: undefined,
    currentStep: undefined,
    parentSpan,
    stepSpan: parentSpan,
  };
  if (entryLabel !== undefined) trace(run, entryLabel, input);
  let outcome: Awaitable<StepsOutcome>;
  try {
    outcome = runSteps(run, flow.steps, input, true);
  } catch (thrown) {
    return stepsFailed(run, flow, thrown);
  }
  if (outcome instanceof Promise) {
    return outcome.then(
      (o) => stepsDone(run, o),
      (thrown: unknown) => stepsFailed(run, flow, thrown),
    );
  }
  return stepsDone(run, outcome);
}

function stepsDone(run: FlowRun, { output, stopped }: StepsOutcome): FlowResult {
  return {
    status: run.status ?? 200,
    headers: run.headers,
    output,
    filtered: stopped && run.exec.delivery === 'queue' && run.depth === 0,
    faultHandled: false,
  };
}

/** A step failed: the `## Fault:` handler's answer when it handles the failure, else the failure. */
async function stepsFailed(run: FlowRun, flow: PreparedFlow, thrown: unknown): Promise<FlowResult> {
  const err = asSvcError(thrown, run.currentStep);
  if (flow.fault === undefined || !faultHandles(err)) throw withSoapFault(err, run, run.depth);
  const result = await runFault(run, flow, err).catch((e: unknown) => {
    throw withSoapFault(e as SvcError, run, run.depth);
  });
  const soapFault = run.depth === 0 ? soapFaultOf(run.ctx) : undefined;
  return soapFault === undefined ? result : { ...result, soapFault };
}

/**
 * Which failures the `## Fault:` handler answers: every step failure, validate rejections included
 * (the spec's handler "answers with the status the error would otherwise have had", so a 400/422
 * can be reshaped). Not handled: the time limit (running more steps would extend it), an artifact
 * failing its integrity check and storage being unreachable (not the flow's doing; the queue
 * dead-letters or retries those by class).
 */
function faultHandles(err: SvcError): boolean {
  return !(err instanceof FlowTimeoutError || err instanceof IntegrityError || err instanceof StorageUnavailableError);
}

async function runFault(run: FlowRun, flow: PreparedFlow, err: SvcError): Promise<FlowResult> {
  const failedStep = (err as { step?: string }).step ?? run.currentStep ?? null;
  // The cause, as the log says it (issue 36): the public text ("flow execution failed") told the
  // handler nothing. A handler that echoes fault_error to its caller now says why, which an author
  // choosing to do so decides (docs/flow-language.md).
  const faultInput = faultInputOf(err, failedStep, run.exec.correlationId);
  run.status = undefined;
  if (err.headers !== undefined) Object.assign(run.headers, err.headers);
  trace(run, 'fault', faultInput);
  let output: unknown;
  try {
    ({ output } = await runSteps(run, flow.fault!, faultInput, false));
  } catch (thrown) {
    const inner = asSvcError(thrown, run.currentStep);
    throw new FaultHandlerFailedError(
      run.currentStep,
      `fault handler of ${flow.ir.tenant}/${flow.ir.flow} failed in step '${run.currentStep}': ${detailOf(inner)}`,
      inner,
    );
  }
  const result: FlowResult = {
    status: run.status ?? err.status,
    headers: run.headers,
    output,
    filtered: false,
    faultHandled: true,
    handledError: err,
  };
  if (run.status !== undefined) result.faultResponseStatus = run.status;
  return result;
}

/** call_flow / split / fork: the latest version of a flow of the same tenant, one level deeper. */
async function runChild(
  parent: FlowRun,
  name: string,
  message: unknown,
  entryLabel: string | undefined,
): Promise<unknown> {
  const exec = parent.exec;
  const { tenant } = parent.flow.ir;
  const step = parent.currentStep;
  if (parent.depth + 1 > exec.maxCallDepth) {
    throw new FlowDefectError(
      step,
      `step '${step}': calling '${tenant}/${name}' would nest ${parent.depth + 1} flows deep (limit ${exec.maxCallDepth}); is a flow calling itself?`,
    );
  }
  if (exec.loadFlow === undefined)
    throw new FlowDefectError(step, `step '${step}': this process cannot load flows for call_flow`);
  let loaded;
  try {
    loaded = await exec.loadFlow(tenant, name);
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw new FlowDefectError(
      step,
      `step '${step}': loading '${tenant}/${name}' failed: ${(err as Error)?.message}`,
      err,
    );
  }
  if (loaded === undefined) throw new FlowDefectError(step, `step '${step}': flow '${tenant}/${name}' not found`);
  // The called flow's steps are children of the calling step's span.
  const result = await executeFlow(
    exec,
    prepareFlow(loaded.ir),
    message,
    parent.depth + 1,
    undefined,
    entryLabel,
    parent.stepSpan,
  );
  return result.output;
}

/** Carries the flow's SOAP fault fields on the error the top flow throws (first writer wins). */
function withSoapFault(err: SvcError, run: FlowRun, depth: number): SvcError {
  if (depth === 0 && err instanceof FlowError && err.soapFault === undefined) err.soapFault = soapFaultOf(run.ctx);
  return err;
}

function asSvcError(thrown: unknown, step: string | undefined): SvcError {
  if (thrown instanceof SvcError) return thrown;
  return new FlowDefectError(step, `step '${step}': ${(thrown as Error)?.message ?? String(thrown)}`, thrown);
}

function detailOf(err: SvcError): string {
  return (err as { detail?: string }).detail ?? err.message;
}

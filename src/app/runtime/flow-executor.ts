/**
 * The one executor through which every door runs a flow (/run, SOAP, gRPC, cron and queue
 * deliveries): the flow-state guard (deduplication, correlation), the concurrency bound, the
 * boundary log rows, the flow's mask, the payload tracing flag and the time limit. A feature added
 * here reaches every door at once.
 */
import { failedStepOf, failureDetail, flowNotFound, StorageUnavailableError, SvcError } from '../../common/errors.js';
import type { Awaitable } from '../../common/awaitable.js';
import { msSince } from '../../common/clock.js';
import type { SettingName } from '../../common/settings.js';
import {
  startTrace,
  traceIdOf,
  type IncomingTraceContext,
  type SpanRole,
  type TraceSpan,
} from '../../common/trace-context/spans.js';
import {
  BUSY_RETRY_AFTER_SECS,
  maskOf,
  runFlowNow,
  type ExecutionLimiter,
  type FlowResult,
  type LoadedFlow,
  type RunDeps,
} from '../../engine/index.js';
import type { FlowIR } from '../../ir/types.js';
import type { EventEmitter } from '../../store/event-log/event-sink.js';
import type { RunGuard } from './dedup-guard.js';
import { replayReason } from './dedup.js';
import { msSinceEnqueued } from './delivery-outcome.js';
import type { DoorCall } from './door-call.js';
import { NULL_EXECUTION_OBSERVER, type ExecutionObserver, type ExecutionOutcome } from './execution-observer.js';
import type { RunMeta } from './run-meta.js';

export interface FlowExecutorDeps {
  /** Resolves `latest` (cached by hash, verified); throws IntegrityError or StorageUnavailableError. */
  loadFlow(tenant: string, name: string): LoadedFlow | undefined;
  /** A platform setting, read when the spec says (the size ceiling: per request). */
  setting(name: SettingName): number;
  /** `max_concurrent_flow_executions`: bounds the synchronous doors (a queue's worker bounds itself). */
  readonly limiter: ExecutionLimiter;
  readonly events: EventEmitter;
  /** Payload tracing flag per (tenant, flow); asked once per execution. */
  traceEnabled(tenant: string, flow: string): boolean;
  /** `flow_max_duration_secs`, read at startup. */
  readonly maxDurationSecs: number;
  /** Effects, the flow loader for composition, the event sink: shared by every execution. */
  readonly engine: RunDeps;
  /** Deduplication and correlation (dedup-guard.ts); consulted only for flows declaring those keys. */
  readonly guard?: RunGuard | undefined;
  /** Told of every execution's outcome and duration (metrics). @default none */
  readonly observer?: ExecutionObserver | undefined;
}

/** The label of a delivery's first `step_traced` row, by door (docs/tracing.md). */
const ENTRY_LABELS: Readonly<Record<RunMeta['door'], string>> = Object.freeze({
  http: 'received',
  soap: 'received',
  grpc: 'received',
  cron: 'scheduled',
  queue: 'dequeued',
});

/** The execution span's kind by door: a request served, a message consumed, or a timer's own work. */
const SPAN_ROLES: Readonly<Record<RunMeta['door'], SpanRole>> = Object.freeze({
  http: 'server',
  soap: 'server',
  grpc: 'server',
  cron: 'internal',
  queue: 'consumer',
});

/** What an answered execution's `completed` row and its bookkeeping need, carried from its start. */
interface Answering {
  readonly ir: FlowIR;
  readonly meta: RunMeta;
  readonly mask: ReturnType<typeof maskOf>;
  readonly span: TraceSpan;
  /** `performance.now()` at the start: the row's duration. */
  readonly started: number;
}

export class FlowExecutor {
  readonly #deps: FlowExecutorDeps;
  readonly #observer: ExecutionObserver;

  constructor(deps: FlowExecutorDeps) {
    this.#deps = deps;
    this.#observer = deps.observer ?? NULL_EXECUTION_OBSERVER;
  }

  /** The latest artifact of (tenant, name), or a 404 error naming it. */
  resolve(tenant: string, name: string): LoadedFlow {
    const flow = this.#deps.loadFlow(tenant, name);
    if (flow === undefined) throw flowNotFound(tenant, name);
    return flow;
  }

  /** Message ceiling for this access point: the flow's `max_message_bytes`, else the platform setting. */
  ceiling(flow: LoadedFlow | undefined): number {
    return flow?.ir.maxMessageBytes ?? this.#deps.setting('max_message_bytes');
  }

  /**
   * A synchronous delivery that passed the gate but failed before its flow started (no flow, body
   * too large, bad signature, unparseable body): it still gets its `received` and `completed` rows.
   * @param started `performance.now()` when the delivery entered (its `completed` row's duration); none when absent
   */
  recordRejected(
    tenant: string,
    name: string,
    correlationId: string,
    err: unknown,
    traceContext?: IncomingTraceContext,
    started?: number,
  ): void {
    // No execution started, so no span: the rows name the caller's trace when it sent one.
    const base = {
      correlation_id: correlationId,
      tenant,
      flow: name,
      trace_id: traceIdOf(traceContext?.traceparent) ?? null,
    };
    this.#deps.events.emit({ ...base, event: 'received' });
    this.#deps.events.emit({
      ...base,
      event: 'completed',
      http_status: statusOf(err),
      reason: detailOf(err),
      duration_ms: started === undefined ? null : msSince(started),
      failed_step: failedStepOf(err),
    });
  }

  /**
   * The one entry of a door that answers a request (HTTP /run, SOAP, gRPC): the flow the gate
   * admitted (else looked up here), the body within its ceiling, the rejection rows of a request
   * that fails before its flow starts, then the run; the door only translates in and out. On /run
   * this async function takes the place of the door's own, so the path has no extra promise.
   */
  async serve<B, A>(call: DoorCall<B, A>): Promise<A> {
    const started = performance.now();
    let flow: LoadedFlow;
    let input: unknown;
    try {
      flow = call.admitted ?? this.resolve(call.tenant, call.flow);
      input = call.input(flow, await call.read(this.ceiling(flow)));
    } catch (err) {
      if (call.recordsRejection)
        this.recordRejected(call.tenant, call.flow, call.correlationId, err, call.traceContext, started);
      return call.fail(err);
    }
    try {
      // From here the executor records the delivery itself; a flow whose steps never wait is
      // answered without a promise in between (runFlowNow).
      const result = this.runNow(flow, input, call);
      return call.answer(result instanceof Promise ? await result : result);
    } catch (err) {
      return call.fail(err);
    }
  }

  /**
   * Runs the flow for a door. Synchronous doors get 503 `server busy` before it starts when too
   * many executions are in flight. The boundary rows wrap the flow-state guard, so a replayed, held
   * back or refused duplicate is recorded like any delivery. Failures are thrown (SvcError
   * subclasses); a queue delivery's caller decides retry or dead letter by their class.
   */
  async run(flow: LoadedFlow, input: unknown, meta: RunMeta): Promise<FlowResult> {
    return this.runNow(flow, input, meta);
  }

  /**
   * run(), with the result at once when the flow's steps never waited (runFlowNow); a refusal
   * (503 busy) may be thrown from the call. serve() answers through it.
   */
  runNow(flow: LoadedFlow, input: unknown, meta: RunMeta): Awaitable<FlowResult> {
    return meta.door === 'queue' ? this.#deliver(flow, input, meta) : this.#answer(flow, input, meta);
  }

  /** A synchronous door: bounded, with `received` and `completed` rows. */
  #answer(flow: LoadedFlow, input: unknown, meta: RunMeta): Awaitable<FlowResult> {
    const started = performance.now();
    if (!this.#deps.limiter.tryAcquire()) {
      this.#observer.executed(flow.ir.tenant, flow.ir.flow, meta.door, 'busy', (performance.now() - started) / 1000);
      throw new SvcError('SVC_ERR_BUSY', 'server busy: too many flow executions in flight', {
        headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECS) },
      });
    }
    const { ir } = flow;
    const mask = maskOf(ir);
    const span = executionSpan(flow, meta);
    // Plain literals of one shape, not spreads of a shared base: on the /run path the spreads cost
    // more than the rest of the event bookkeeping together.
    this.#deps.events.emit({
      event: 'received',
      correlation_id: meta.correlationId,
      tenant: ir.tenant,
      flow: ir.flow,
      logLevel: ir.logLevel,
      mask,
      payload: input,
      trace_id: span.traceId,
    });
    const answering: Answering = { ir, meta, mask, span, started };
    let result: Awaitable<FlowResult>;
    try {
      result = this.#guarded(flow, input, meta, this.#traced(flow), span);
    } catch (err) {
      return this.#answerFailed(answering, err);
    }
    if (result instanceof Promise) {
      return result.then(
        (r) => this.#answered(answering, r),
        (err: unknown) => this.#answerFailed(answering, err),
      );
    }
    return this.#answered(answering, result);
  }

  /** The `completed` row of an answered execution; its slot is given back. */
  #answered(a: Answering, result: FlowResult): FlowResult {
    const { ir, meta } = a;
    try {
      // A handled failure or a replay says so (issue 36); undefined on the usual answer's row.
      const why = notedOutcome(result);
      const ms = msSince(a.started);
      this.#deps.events.emit({
        event: 'completed',
        correlation_id: meta.correlationId,
        tenant: ir.tenant,
        flow: ir.flow,
        logLevel: ir.logLevel,
        mask: a.mask,
        payload: result.output,
        http_status: result.status,
        outcome: why?.outcome,
        reason: why?.reason,
        trace_id: a.span.traceId,
        duration_ms: ms,
        failed_step: why?.step,
      });
      const outcome = outcomeOf(result);
      this.#observer.executed(ir.tenant, ir.flow, meta.door, outcome, ms / 1000);
      endExecutionSpan(a.span, outcome, result.status);
    } catch (err) {
      // Recording it failed: the delivery is recorded as the failure it became.
      return this.#answerFailed(a, err);
    }
    this.#deps.limiter.release();
    return result;
  }

  /** The `completed` row of a failed execution; its slot is given back and the failure thrown on. */
  #answerFailed(a: Answering, err: unknown): never {
    const { ir, meta } = a;
    try {
      // The operator-facing detail (which step, which variable), never the wire message alone.
      const ms = msSince(a.started);
      this.#deps.events.emit({
        event: 'completed',
        correlation_id: meta.correlationId,
        tenant: ir.tenant,
        flow: ir.flow,
        logLevel: ir.logLevel,
        mask: a.mask,
        http_status: statusOf(err),
        reason: detailOf(err),
        trace_id: a.span.traceId,
        duration_ms: ms,
        failed_step: failedStepOf(err),
      });
      this.#observer.executed(ir.tenant, ir.flow, meta.door, 'failed', ms / 1000);
      endExecutionSpan(a.span, 'failed', statusOf(err), err);
    } finally {
      this.#deps.limiter.release();
    }
    throw err;
  }

  /**
   * A queue delivery: `queue_processed` or `queue_filtered` once it is done (a failure is the
   * worker's `queue_failed`). Their duration runs from the message's enqueue time: the wait in the
   * queue (wall clock, whole milliseconds) plus this execution (monotonic clock).
   */
  async #deliver(flow: LoadedFlow, input: unknown, meta: RunMeta): Promise<FlowResult> {
    const { ir } = flow;
    const waitedMs = msSinceEnqueued(meta.enqueuedAt);
    const started = performance.now();
    const span = executionSpan(flow, meta);
    let result: FlowResult;
    try {
      result = await this.#guarded(flow, input, meta, this.#traced(flow), span);
    } catch (err) {
      this.#observer.executed(ir.tenant, ir.flow, 'queue', 'failed', (performance.now() - started) / 1000);
      endExecutionSpan(span, 'failed', statusOf(err), err);
      throw err;
    }
    const outcome = outcomeOf(result);
    this.#observer.executed(ir.tenant, ir.flow, 'queue', outcome, (performance.now() - started) / 1000);
    endExecutionSpan(span, outcome, result.status);
    const mask = maskOf(ir);
    if (result.filtered) {
      this.#deps.events.emit({
        event: 'queue_filtered',
        correlation_id: meta.correlationId,
        tenant: ir.tenant,
        flow: ir.flow,
        logLevel: ir.logLevel,
        mask,
        outcome: 'filtered',
        trace_id: span.traceId,
        duration_ms: waitedMs + msSince(started),
      });
    } else {
      const why = notedOutcome(result);
      this.#deps.events.emit({
        event: 'queue_processed',
        correlation_id: meta.correlationId,
        tenant: ir.tenant,
        flow: ir.flow,
        logLevel: ir.logLevel,
        mask,
        outcome: why?.outcome ?? outcome,
        payload: result.output,
        http_status: result.status,
        reason: why?.reason,
        trace_id: span.traceId,
        duration_ms: waitedMs + msSince(started),
        failed_step: why?.step,
      });
    }
    return result;
  }

  /** The execution itself, inside the flow-state guard when the flow declares dedup or correlation keys. */
  #guarded(flow: LoadedFlow, input: unknown, meta: RunMeta, trace: boolean, span: TraceSpan): Awaitable<FlowResult> {
    const { ir } = flow;
    const guard = this.#deps.guard;
    if (guard === undefined || (ir.dedup === undefined && ir.correlation === undefined))
      return this.#execute(ir, input, meta, trace, span);
    return guard.around(flow, input, meta, async () => this.#execute(ir, input, meta, trace, span));
  }

  #execute(ir: FlowIR, input: unknown, meta: RunMeta, trace: boolean, span: TraceSpan): Awaitable<FlowResult> {
    const queued = meta.door === 'queue';
    const opts = {
      correlationId: meta.correlationId,
      headers: meta.headers,
      soap: meta.soap,
      maxDurationSecs: this.#deps.maxDurationSecs,
      trace,
      entryLabel: ENTRY_LABELS[meta.door],
      delivery: queued ? ('queue' as const) : ('run' as const),
      span,
    };
    return runFlowNow(ir, input, opts, this.#deps.engine);
  }

  /** The tracing flag; a registry that cannot be read is storage unavailable (503; a queue delivery waits 1 s). */
  #traced(flow: LoadedFlow): boolean {
    try {
      return this.#deps.traceEnabled(flow.ir.tenant, flow.ir.flow);
    } catch (err) {
      // The caller reads a fixed text; the storage's own message (table names, paths) goes to the log row only.
      throw new StorageUnavailableError(REGISTRY_UNAVAILABLE, err);
    }
  }
}

/**
 * The execution's span: a child of the caller's when the door passed valid W3C trace context.
 * Without an SDK it only carries the trace id (no attribute is set on it then).
 */
function executionSpan(flow: LoadedFlow, meta: RunMeta): TraceSpan {
  const { ir } = flow;
  return startTrace(`flow ${ir.tenant}/${ir.flow}`, SPAN_ROLES[meta.door], meta.traceContext, {
    'svc.tenant': ir.tenant,
    'svc.flow': ir.flow,
    'svc.flow.version': flow.version,
    'svc.door': meta.door,
    'svc.correlation_id': meta.correlationId,
  });
}

function endExecutionSpan(span: TraceSpan, outcome: ExecutionOutcome, status: number, err?: unknown): void {
  if (span.sdk) {
    span.setAttribute('svc.outcome', outcome);
    span.setAttribute('http.response.status_code', status);
  }
  span.end(err);
}

function outcomeOf(result: FlowResult): ExecutionOutcome {
  return result.filtered ? 'filtered' : result.faultHandled ? 'fault_handled' : 'succeeded';
}

function statusOf(err: unknown): number {
  return err instanceof SvcError ? err.status : 500;
}

/** The public text of a registry that cannot be read while an execution starts (503). */
export const REGISTRY_UNAVAILABLE = 'registry unavailable: the flow registry could not be read';

/**
 * What the operator log says of a failure: a flow error's detail (which step, why); a storage
 * failure's fixed text with its cause (what the storage said); else the message. The same text a
 * fault handler reads as `fault_error` (engine/fault-input.ts).
 */
function detailOf(err: unknown): string {
  return err instanceof SvcError ? failureDetail(err) : err instanceof Error ? err.message : String(err);
}

/**
 * What the log row of an answered execution says beyond its status (issue 36): a failure the fault
 * section handled keeps its cause (the boundary row carries no `step`, so the step is named in the
 * text); a dedup replay says whose answer it repeats. Undefined for the usual answer.
 */
function notedOutcome(result: FlowResult): { outcome: string; reason: string; step?: string } | undefined {
  if (result.faultHandled && result.handledError !== undefined) {
    const err = result.handledError;
    const detail = failureDetail(err);
    const step = failedStepOf(err);
    const named = step === undefined || detail.startsWith(`step '${step}'`) ? detail : `step '${step}': ${detail}`;
    return { outcome: 'fault_handled', reason: `fault handled: ${named}`, step };
  }
  if (result.replayOf !== undefined) return { outcome: 'replayed', reason: replayReason(result.replayOf) };
  return undefined;
}

/** The engine's public contract: what a door passes to runFlow, what it gets back, what an effect is. */
import type { MaskSet } from '../common/mask.js';
import type { SvcError } from '../common/errors.js';
import type { EffectName, FlowIR, StepIR } from '../ir/types.js';
import type { EventEmitter } from '../store/event-log/event-sink.js';
import type { TraceSpan } from '../common/trace-context/spans.js';
import type { ExecutionProbe } from './probe.js';

/** The flow context every expression reads as `ctx`. Known keys below; `ctx.<key>` from config, secret_read and set_ctx. */
export type FlowContext = Record<string, unknown> & {
  correlation_id: string;
  headers: Record<string, string>;
  input: unknown;
};

/** Per-execution options, chosen by the door. */
export interface RunOptions {
  /** The delivery's correlation ID (`ctx.correlation_id`). */
  correlationId: string;
  /** `ctx.headers`, built with `buildHeaders` by the HTTP door. @default {} */
  headers?: Record<string, string>;
  /** The flow's `config` values (`SVC_CONFIG_<KEY>`), keyed by config key. @default read from the environment */
  config?: Record<string, string>;
  /** `ctx.soap_action` / `ctx.soap_version` of a SOAP request. */
  soap?: { action?: string; version?: string };
  /** `flow_max_duration_secs`, checked between steps. @default 7200 */
  maxDurationSecs?: number;
  /** Payload tracing on for this (tenant, flow): emits `step_traced` rows. @default false */
  trace?: boolean;
  /** Label of the first `step_traced` row (`received` on /run, SOAP and gRPC, `scheduled` on a cron tick, `dequeued` in a worker). */
  entryLabel?: string;
  /** `run` (a false condition ends the flow, answered) or `queue` (it reports `filtered`). @default 'run' */
  delivery?: 'run' | 'queue';
  /** The execution's span (made by the executor): steps are its children, its trace id goes in the trace rows. @default a new trace no SDK records */
  span?: TraceSpan;
}

/**
 * A deployed version of a flow with its verified IR: what a door runs, and what `call_flow`, `split`
 * and `fork` resolve by name (the latest version).
 */
export interface LoadedFlow {
  readonly ir: FlowIR;
  readonly version: string;
  readonly hash: string;
  /** ISO 8601 UTC publication time of this version. */
  readonly created_at: string;
}

/** What an effect handler receives. The handler must not modify `message` or `ctx` except as documented. */
export interface EffectCall {
  readonly ir: FlowIR;
  readonly step: StepIR;
  /** The step's message (its `ntd` rendering, or its input). */
  readonly message: unknown;
  readonly ctx: FlowContext;
  readonly correlationId: string;
  /** Tracing is on: an `http_egress` handler emits `egress_traced` through `events`. */
  readonly trace: boolean;
  readonly events: EventEmitter;
  /** The flow's mask (global list plus log_extra_mask_fields), for anything the handler logs. */
  readonly mask: MaskSet;
  readonly env: NodeJS.ProcessEnv;
  /** The running step's span: the parent of an egress call's span (its `traceparent`) or of a queued message. */
  readonly span: TraceSpan;
}

/** What an effect returns: the step output, and for a call out its status and headers. */
export interface EffectResult {
  output: unknown;
  /** Backend status; readable afterwards as `ctx.response.status` (e.g. for `response_status`). */
  status?: number;
  /** Backend response headers (lowercase names); the flow's `response_headers` pass them back. */
  headers?: Record<string, string>;
}

/**
 * Performs one effect. Throw `EgressError` (or any SvcError) for a failed call out; any other
 * thrown error is wrapped in `EgressError` (502, retried by the queue).
 */
export type EffectHandler = (call: EffectCall) => Promise<EffectResult> | EffectResult;

/** Long-lived collaborators, shared by every execution. */
export interface RunDeps {
  /** Handlers by effect; `secret_read` is built in (a handler given here replaces it). */
  effects?: Partial<Record<EffectName, EffectHandler>>;
  /** Resolves the latest version of a flow of the tenant; undefined when none is deployed. */
  loadFlow?: (tenant: string, name: string) => Promise<LoadedFlow | undefined> | LoadedFlow | undefined;
  /** Where trace rows go. @default dropped */
  events?: EventEmitter;
  /** Environment read by `secret_read` and default config. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Clock for the time limit, in ms. @default Date.now */
  now?: () => number;
  /** Concurrent branches of one `split`. @default 8 */
  splitConcurrency?: number;
  /** Nested call_flow/split/fork depth before the flow is declared defective. @default 16 */
  maxCallDepth?: number;
  /** Told of every point an execution reaches (`svc test --coverage`). @default none */
  probe?: ExecutionProbe;
  /** Told of every step that ran, with its time and whether it threw (the per-minute rollups). @default none */
  stepTimer?: StepTimer;
}

/** A step of `ir` ran for `ms` milliseconds; `failed` when it threw. Keep it to a few increments: it runs per step. */
export type StepTimer = (ir: FlowIR, step: string, ms: number, failed: boolean) => void;

/** A finished execution. Failures are thrown (SvcError subclasses), never returned. */
export interface FlowResult {
  status: number;
  /** Response headers set by the flow (lowercase names). */
  headers: Record<string, string>;
  /** JSON value, string, null or XmlValue. */
  output: unknown;
  /** A `condition` was false on a queue delivery: the message is dropped (`queue_filtered`). */
  filtered: boolean;
  /** A step failed and the `## Fault:` handler answered (`outcome` fault_handled). */
  faultHandled: boolean;
  /** With faultHandled: the error the handler handled (for the log). */
  handledError?: SvcError;
  /** With faultHandled: the `response_status` the fault section set, if any (a SOAP fault honours it even when it equals the error's). */
  faultResponseStatus?: number;
  /** `ctx.soap_fault_code` / `ctx.soap_fault_string` when the flow set them (the SOAP door's fault envelope). */
  soapFault?: { code?: string; string?: string };
  /** A dedup replay: the correlation id of the delivery whose recorded answer this is (the flow did not run). */
  replayOf?: string;
}

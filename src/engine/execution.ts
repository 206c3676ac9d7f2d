/** The state one execution carries through its flows: options, deadline, depth, and one flow's run. */
import type { PreparedFlow } from './prepare.js';
import type { EffectHandler, FlowContext, LoadedFlow, RunDeps, StepTimer } from './types.js';
import type { EffectName } from '../ir/types.js';
import type { ExecutionProbe } from './probe.js';
import { NULL_EVENTS, type EventEmitter } from '../store/event-log/event-sink.js';
import { detachedSpan, type TraceSpan } from '../common/trace-context/spans.js';

/** Shared by the top flow and every flow it calls. Fixed when the execution starts. */
export interface Execution {
  readonly correlationId: string;
  readonly headers: Record<string, string>;
  readonly soap: { action?: string; version?: string } | undefined;
  readonly trace: boolean;
  readonly delivery: 'run' | 'queue';
  readonly events: EventEmitter;
  readonly env: NodeJS.ProcessEnv;
  readonly effects: Partial<Record<EffectName, EffectHandler>>;
  readonly loadFlow: RunDeps['loadFlow'];
  readonly now: () => number;
  readonly startedMs: number;
  readonly limitSecs: number;
  readonly splitConcurrency: number;
  readonly maxCallDepth: number;
  /** `svc test`'s coverage probe; undefined in the service. */
  readonly probe: ExecutionProbe | undefined;
  /** The rollups' step timer; undefined outside the service. */
  readonly stepTimer: StepTimer | undefined;
  /** The execution's span: its trace id is written in the trace rows; the top flow's steps are its children. */
  readonly span: TraceSpan;
  /** Runs another flow of the tenant on a message (call_flow, split, fork); set by run-flow.ts. */
  readonly runChild: ChildRunner;
}

/** Runs flow `name` of the caller's tenant on `message` one level deeper; resolves to its output. */
export type ChildRunner = (
  parent: FlowRun,
  name: string,
  message: unknown,
  entryLabel: string | undefined,
) => Promise<unknown>;

/** One flow being run (the top flow, or a callee): its own context, answer and snapshots. */
export interface FlowRun {
  readonly exec: Execution;
  readonly flow: PreparedFlow;
  readonly ctx: FlowContext;
  /** Nesting level: 0 for the flow the door started. */
  readonly depth: number;
  /** Status set by `response_status` (undefined: the default). */
  status: number | undefined;
  headers: Record<string, string>;
  snapshots: Map<string, unknown> | undefined;
  /** The step running now (reported as `fault_step`). */
  currentStep: string | undefined;
  /** The parent of this run's step spans: the execution's span, or for a called flow the calling step's. */
  readonly parentSpan: TraceSpan;
  /** The running step's span (its effects' parent); `parentSpan` when no SDK records step spans. */
  stepSpan: TraceSpan;
}

export type { LoadedFlow };

export function makeExecution(
  opts: {
    correlationId: string;
    headers?: Record<string, string>;
    soap?: { action?: string; version?: string };
    trace?: boolean;
    delivery?: 'run' | 'queue';
    maxDurationSecs?: number;
    span?: TraceSpan;
  },
  deps: RunDeps,
  runChild: ChildRunner,
): Execution {
  const now = deps.now ?? Date.now;
  return {
    correlationId: opts.correlationId,
    headers: opts.headers ?? {},
    soap: opts.soap,
    trace: opts.trace ?? false,
    delivery: opts.delivery ?? 'run',
    events: deps.events ?? NULL_EVENTS,
    env: deps.env ?? process.env,
    effects: deps.effects ?? {},
    loadFlow: deps.loadFlow,
    now,
    startedMs: now(),
    limitSecs: opts.maxDurationSecs ?? 7200,
    splitConcurrency: Math.max(1, deps.splitConcurrency ?? 8),
    maxCallDepth: Math.max(1, deps.maxCallDepth ?? 16),
    probe: deps.probe,
    stepTimer: deps.stepTimer,
    span: opts.span ?? detachedSpan(),
    runChild,
  };
}

/** Environment variable holding a config or secret key: `<prefix><KEY uppercased>`, non-alphanumerics as `_`. */
export function envName(prefix: string, key: string): string {
  return prefix + key.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

/** A new context for one flow run: ctx.correlation_id, headers, input, soap_*, config keys. */
export function makeContext(
  exec: Execution,
  flow: PreparedFlow,
  input: unknown,
  config: Record<string, string> | undefined,
): FlowContext {
  const ctx: FlowContext = { correlation_id: exec.correlationId, headers: exec.headers, input };
  if (exec.soap !== undefined) {
    if (exec.soap.action !== undefined) ctx.soap_action = exec.soap.action;
    if (exec.soap.version !== undefined) ctx.soap_version = exec.soap.version;
  }
  for (const key of flow.ir.config) {
    const value = config !== undefined ? config[key] : exec.env[envName('SVC_CONFIG_', key)];
    if (value !== undefined) ctx[key] = value;
  }
  return ctx;
}

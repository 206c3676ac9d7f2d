/**
 * The /run use case, shared by every synchronous door (HTTP, SOAP, gRPC): resolve `latest`, decide
 * the body ceiling, bound concurrency, execute, and record `received` / `completed`.
 */
import { FlowError, flowNotFound, SvcError } from '../common/errors.js';
import type { SettingName } from '../common/settings.js';
import { BUSY_RETRY_AFTER_SECS, prepareFlow, runFlow, type ExecutionLimiter, type FlowResult, type RunDeps } from '../engine/index.js';
import type { LoadedFlow } from './registry.js';
import type { RunGuard } from './dedup-guard.js';
import type { EventEmitter } from '../store/event-sink.js';

export interface FlowRunnerDeps {
  /** Resolves `latest` (cached by hash, verified); throws IntegrityError or StorageUnavailableError. */
  loadFlow(tenant: string, name: string): LoadedFlow | undefined;
  /** A platform setting, read when the spec says (the size ceiling: per request). */
  setting(name: SettingName): number;
  limiter: ExecutionLimiter;
  events: EventEmitter;
  /** Payload tracing flag per (tenant, flow); checked on every /run. */
  traceEnabled(tenant: string, flow: string): boolean;
  /** `flow_max_duration_secs`, read at startup. */
  maxDurationSecs: number;
  engine: RunDeps;
  /** Dedup / correlation guard (src/app/dedup-guard.ts); only consulted for flows declaring those keys. */
  guard?: RunGuard;
}

export interface RunMeta {
  correlationId: string;
  headers: Record<string, string>;
  soap?: { action?: string; version?: string };
  /** @internal Set by FlowRunner when the flow-state guard already wraps this run. */
  guarded?: boolean;
}

export class FlowRunner {
  readonly #deps: FlowRunnerDeps;

  constructor(deps: FlowRunnerDeps) {
    this.#deps = deps;
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
   * A /run delivery that passed the gate but failed before its flow started (no flow, body too
   * large, bad signature, unparseable body): it still gets its `received` and `completed` rows.
   */
  recordRejected(tenant: string, name: string, correlationId: string, err: unknown): void {
    const base = { correlation_id: correlationId, tenant, flow: name };
    this.#deps.events.emit({ ...base, event: 'received' });
    const status = err instanceof SvcError ? err.status : 500;
    const reason = err instanceof FlowError ? err.detail : err instanceof Error ? err.message : String(err);
    this.#deps.events.emit({ ...base, event: 'completed', http_status: status, reason });
  }

  /** Runs the flow; 503 before it starts when too many executions are in flight. */
  async run(flow: LoadedFlow, input: unknown, meta: RunMeta): Promise<FlowResult> {
    const { ir } = flow;
    if ((ir.dedup !== undefined || ir.correlation !== undefined) && this.#deps.guard !== undefined && meta.guarded !== true) {
      return this.#deps.guard.around(flow, input, meta, () => this.run(flow, input, { ...meta, guarded: true }));
    }
    if (!this.#deps.limiter.tryAcquire()) {
      throw new SvcError('SVC_ERR_BUSY', 'server busy: too many flow executions in flight', {
        headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECS) },
      });
    }
    const events = this.#deps.events;
    const mask = maskOf(flow);
    // Plain literals of one shape, not spreads of a shared base: on the /run path the spreads cost
    // more than the rest of the event bookkeeping together.
    events.emit({ event: 'received', correlation_id: meta.correlationId, tenant: ir.tenant, flow: ir.flow, logLevel: ir.logLevel, mask, payload: input });
    try {
      const result = await runFlow(
        ir,
        input,
        {
          correlationId: meta.correlationId,
          headers: meta.headers,
          soap: meta.soap,
          maxDurationSecs: this.#deps.maxDurationSecs,
          trace: this.#deps.traceEnabled(ir.tenant, ir.flow),
          entryLabel: 'received',
          delivery: 'run',
        },
        this.#deps.engine,
      );
      events.emit({ event: 'completed', correlation_id: meta.correlationId, tenant: ir.tenant, flow: ir.flow, logLevel: ir.logLevel, mask, payload: result.output, http_status: result.status });
      return result;
    } catch (err) {
      const status = err instanceof SvcError ? err.status : 500;
      // The operator-facing detail (which step, which variable), never the wire message alone.
      const reason = err instanceof FlowError ? err.detail : err instanceof Error ? err.message : String(err);
      events.emit({ event: 'completed', correlation_id: meta.correlationId, tenant: ir.tenant, flow: ir.flow, logLevel: ir.logLevel, mask, http_status: status, reason });
      throw err;
    } finally {
      this.#deps.limiter.release();
    }
  }
}

/** The flow's log mask (global list plus its `log_extra_mask_fields`); undefined: the global list. */
function maskOf(flow: LoadedFlow) {
  try {
    return prepareFlow(flow.ir).mask;
  } catch {
    return undefined; // a flow that does not compile fails in runFlow with its own error
  }
}

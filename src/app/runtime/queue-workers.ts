/**
 * The queue use case of `svc serve`: durable submission (/enqueue and queue_publish) and the
 * workers that run the latest version of a flow on each queued message, joining the queue
 * library, the registry loader and the engine. Retry, dead-letter and drop decisions are taken
 * here by error class.
 */
import { IntegrityError, StorageUnavailableError, EgressError, HeldBackError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { SettingName } from '../../common/settings.js';
import { startTrace, traceIdOf, type IncomingTraceContext, type TraceSpan } from '../../common/trace-context/spans.js';
import { maskOf, type LoadedFlow } from '../../engine/index.js';
import {
  wireOffset,
  type QueueStore,
  type QueueConsumerHandle,
  type QueueMessage,
  type Outcome,
  type AppendResult,
} from '../../queue/index.js';
import type { AuditAppender } from '../../store/audit/audit-thread.js';
import type { EventEmitter } from '../../store/event-log/event-sink.js';
import type { FlowExecutor } from './flow-executor.js';

/** Fixed retry interval when the registry cannot be read (never dead-letters). Milliseconds. */
export const REGISTRY_RETRY_MS = 1000;
/** How often a queue whose worker runs in another process is asked again (that process may have died). Milliseconds. */
const ELSEWHERE_RECHECK_MS = 1000;

export interface QueueWorkersDeps {
  readonly store: QueueStore;
  /** Resolves `latest`; throws IntegrityError (dead-letter) or anything else (registry unreadable: retry at 1 s). */
  loadFlow(tenant: string, name: string): LoadedFlow | undefined;
  /** Platform settings: `max_message_bytes` per request, worker ceilings at construction. */
  setting(name: SettingName): number;
  /**
   * Whether `max_queue_workers_per_tenant` is set (a `system_config` row the reader accepts).
   * When it is not, the per-tenant ceiling equals `max_queue_workers` (spec: inert by default),
   * not the catalogue default. @default () => true (the setting's own value is used)
   */
  perTenantSet?(): boolean;
  readonly events: EventEmitter;
  readonly audit: AuditAppender;
  /** Payload tracing flag per (tenant, flow); checked on every /enqueue (the executor asks on dequeue). */
  traceEnabled(tenant: string, flow: string): boolean;
  /** Runs each delivery: the same executor as every other door (guards, masking, events, time limit). */
  readonly executor: Pick<FlowExecutor, 'run'>;
  readonly log: Logger;
  /** Worker idle poll. Milliseconds. @default 500 */
  readonly pollIntervalMs?: number;
}

/** Whether a queue has a worker after `ensureWorker`. */
export type WorkerStatus = 'running' | 'started' | 'elsewhere' | 'ceiling';

/** Where a submission came from (for the log and audit rows). */
export type SubmissionSource = 'enqueue' | 'queue_publish';

/** `running` accepts submissions and starts workers; `stopped` after close(). */
export type QueueWorkersState = 'running' | 'stopped';

export class QueueWorkers {
  readonly #deps: QueueWorkersDeps;
  readonly #maxWorkers: number;
  readonly #maxPerTenant: number;
  /** Queues this process consumes (key `tenant/flow`). */
  readonly #mine = new Set<string>();
  readonly #perTenant = new Map<string, number>();
  /** Queues consumed by another live process: when we asked last. */
  readonly #elsewhere = new Map<string, number>();
  /** In-flight starts, so concurrent first submissions start one worker. */
  readonly #starting = new Map<string, Promise<WorkerStatus>>();
  #state: QueueWorkersState = 'running';

  constructor(deps: QueueWorkersDeps) {
    this.#deps = deps;
    // Capacity settings are read once, at startup (spec: Limits).
    this.#maxWorkers = deps.setting('max_queue_workers');
    this.#maxPerTenant =
      (deps.perTenantSet?.() ?? true) ? deps.setting('max_queue_workers_per_tenant') : this.#maxWorkers;
  }

  get state(): QueueWorkersState {
    return this.#state;
  }

  /** Workers this process runs. */
  get workerCount(): number {
    return this.#mine.size;
  }

  /**
   * The /enqueue size ceiling: the flow's `max_message_bytes` when it exists and can be read, else
   * the platform setting (read per request). The flow need not exist for /enqueue, and a flow that
   * cannot be read now is the worker's business (dead letter or retry), not the submitter's.
   */
  ceiling(tenant: string, flow: string): number {
    let own: number | undefined;
    try {
      own = this.#deps.loadFlow(tenant, flow)?.ir.maxMessageBytes;
    } catch {
      own = undefined;
    }
    return own ?? this.#deps.setting('max_message_bytes');
  }

  /**
   * /enqueue: appends the message and resolves once an fdatasync covers it; then makes sure the
   * queue has a worker (past the ceiling it gets none, and the message still counts as accepted).
   */
  async enqueue(
    tenant: string,
    flow: string,
    payload: unknown,
    correlationId: string,
    traceContext?: IncomingTraceContext,
  ): Promise<AppendResult> {
    const traced = this.#traceSafe(tenant, flow);
    // The submission's span (a child of the caller's) is what the message carries: the worker's
    // execution becomes its child, in the caller's trace (or a new one started here).
    const span = startTrace(`enqueue ${tenant}/${flow}`, 'producer', traceContext, {
      'svc.tenant': tenant,
      'svc.flow': flow,
      'svc.correlation_id': correlationId,
    });
    const r = await this.#append(tenant, flow, { correlationId, payload }, span);
    this.#recordEnqueued(tenant, flow, r, correlationId, payload, 'enqueue', traced, span.traceId);
    void this.ensureWorker(tenant, flow).catch((err: unknown) =>
      this.#deps.log.error({ err, tenant, flow }, 'queue worker could not be started'),
    );
    return r;
  }

  /**
   * queue_publish: the step fails (EgressError, 502 class) before anything is written when no
   * worker can exist for the target queue; otherwise as enqueue.
   */
  async publish(
    tenant: string,
    flow: string,
    payload: unknown,
    correlationId: string,
    step: string,
    parentSpan: TraceSpan,
  ): Promise<AppendResult> {
    const status = await this.ensureWorker(tenant, flow);
    if (status === 'ceiling') {
      throw new EgressError(
        step,
        `step '${step}': no worker can be started for queue '${tenant}/${flow}' (max_queue_workers ${this.#maxWorkers}, max_queue_workers_per_tenant ${this.#maxPerTenant} reached until restart)`,
      );
    }
    // A child of the publishing step: the target flow's execution continues the publisher's trace.
    const span = parentSpan.child(`enqueue ${tenant}/${flow}`, 'producer', {
      'svc.tenant': tenant,
      'svc.flow': flow,
      'svc.step': step,
      'svc.correlation_id': correlationId,
    });
    const r = await this.#append(tenant, flow, { correlationId, payload }, span);
    this.#recordEnqueued(
      tenant,
      flow,
      r,
      correlationId,
      payload,
      'queue_publish',
      this.#traceSafe(tenant, flow),
      span.traceId,
    );
    return r;
  }

  /** Appends with the submission span's trace context, ending the span with the write's outcome. */
  async #append(
    tenant: string,
    flow: string,
    input: { correlationId: string; payload: unknown },
    span: TraceSpan,
  ): Promise<AppendResult> {
    try {
      const r = await this.#deps.store.append(tenant, flow, {
        ...input,
        traceparent: span.traceparent(),
        tracestate: span.tracestate,
      });
      span.end();
      return r;
    } catch (err) {
      span.end(err);
      throw err;
    }
  }

  /**
   * Starts this process's worker of the queue unless it runs here already, runs in another live
   * process (the library's lock; asked again at most once a second, in case that process died),
   * or the ceiling is reached (then never, until restart).
   */
  ensureWorker(tenant: string, flow: string): Promise<WorkerStatus> {
    const key = `${tenant}/${flow}`;
    if (this.#mine.has(key)) return Promise.resolve('running');
    if (this.#state !== 'running') return Promise.resolve('ceiling');
    const askedAt = this.#elsewhere.get(key);
    if (askedAt !== undefined && Date.now() - askedAt < ELSEWHERE_RECHECK_MS) return Promise.resolve('elsewhere');
    let p = this.#starting.get(key);
    if (!p) {
      p = this.#start(tenant, flow, key).finally(() => this.#starting.delete(key));
      this.#starting.set(key, p);
    }
    return p;
  }

  /**
   * Starts a worker for each queue that holds messages and has none anywhere: on a cluster, the
   * queues of a node that died (its lease gone), and retries that came due meanwhile fire at once.
   * A queue another node runs is asked about at most once a second, as in ensureWorker.
   * @returns how many workers were started
   */
  async adoptOrphans(queues: readonly { tenant: string; flow: string }[]): Promise<number> {
    let started = 0;
    for (const { tenant, flow } of queues) {
      if (this.#state !== 'running') break;
      if ((await this.ensureWorker(tenant, flow)) === 'started') started++;
    }
    return started;
  }

  async #start(tenant: string, flow: string, key: string): Promise<WorkerStatus> {
    const tenantCount = this.#perTenant.get(tenant) ?? 0;
    if (this.#mine.size >= this.#maxWorkers || tenantCount >= this.#maxPerTenant) {
      // A queue another live process consumes still has a worker: that is not a refusal.
      return (await this.#consumedElsewhere(tenant, flow)) ? 'elsewhere' : 'ceiling';
    }
    const consumer: QueueConsumerHandle | undefined = await this.#deps.store.startConsumer(tenant, flow, {
      handler: (msg) => this.#handle(tenant, flow, msg),
      pollIntervalMs: this.#deps.pollIntervalMs ?? 500,
      onAttemptFailed: (f) => {
        this.#deps.events.emit({
          event: 'queue_failed',
          tenant,
          flow,
          outcome: f.deadLettered ? 'dead_lettered' : f.fixed ? 'retry_fixed' : 'retry',
          reason: f.error,
          payload: { id: f.message.id, attempt: f.message.attempt, retry_in_ms: f.retryInMs ?? null },
          logLevel: 'full',
          trace_id: traceIdOf(f.message.traceparent) ?? null,
        });
      },
      onDeadLettered: (d) => {
        // The only record that keeps the correlation id of a dead letter.
        this.#deps.events.emit({
          event: 'dlq_moved',
          correlation_id: d.message.correlationId,
          tenant,
          flow,
          outcome: 'dead_lettered',
          reason: d.error,
          payload: { id: d.message.id, attempts: d.attempts },
          logLevel: 'full',
          trace_id: traceIdOf(d.message.traceparent) ?? null,
        });
        this.#deps.audit.append({
          tenant,
          eventType: 'queue.message.failed',
          payload: { flow, id: d.message.id, attempts: d.attempts, error: d.error },
        });
      },
      onError: (err) => this.#deps.log.error({ err, tenant, flow }, 'queue worker storage error (retrying)'),
      onLockLost: () => {
        // Paused or stalled past the lease: another process runs this queue now, and this one
        // stopped before delivering anything more.
        this.#mine.delete(key);
        this.#perTenant.set(tenant, Math.max(0, (this.#perTenant.get(tenant) ?? 1) - 1));
        this.#elsewhere.set(key, Date.now());
        this.#deps.log.warn(
          { tenant, flow },
          'queue worker lock lost (this process was paused or stalled past the lease); another process runs the queue now',
        );
      },
    });
    if (!consumer) {
      this.#elsewhere.set(key, Date.now());
      return 'elsewhere';
    }
    this.#elsewhere.delete(key);
    this.#mine.add(key);
    this.#perTenant.set(tenant, tenantCount + 1);
    return 'started';
  }

  /** True when the queue's consumer lock names a live process (read only; nothing is taken). */
  async #consumedElsewhere(tenant: string, flow: string): Promise<boolean> {
    return this.#deps.store.consumedElsewhere(tenant, flow);
  }

  /** One delivery: decides the outcome by error class, never by message text. */
  async #handle(tenant: string, flow: string, msg: QueueMessage): Promise<Outcome> {
    let loaded: LoadedFlow | undefined;
    try {
      loaded = this.#deps.loadFlow(tenant, flow);
    } catch (err) {
      if (err instanceof IntegrityError) {
        this.#deps.log.error(
          { tenant, flow, id: msg.id, err: err.message },
          'queued message dead-lettered: the stored artifact fails its integrity check',
        );
        return { kind: 'dead', error: err.message };
      }
      this.#deps.log.error(
        { tenant, flow, id: msg.id, err: (err as Error)?.message },
        'registry unreadable; queued message retried in 1 s',
      );
      return {
        kind: 'retry-fixed',
        delayMs: REGISTRY_RETRY_MS,
        error: `registry unreadable: ${(err as Error)?.message ?? String(err)}`,
      };
    }
    if (loaded === undefined) {
      this.#deps.log.error(
        { tenant, flow, id: msg.id },
        `queued message ${msg.id} dropped: no flow '${tenant}/${flow}' is deployed`,
      );
      return { kind: 'ack' };
    }
    try {
      const traceContext =
        msg.traceparent === undefined ? undefined : { traceparent: msg.traceparent, tracestate: msg.tracestate };
      const result = await this.#deps.executor.run(loaded, msg.payload, {
        door: 'queue',
        correlationId: msg.correlationId,
        headers: {},
        traceContext,
      });
      if (!result.filtered) {
        const outcome = result.faultHandled ? 'fault_handled' : 'succeeded';
        this.#deps.audit.append({
          tenant,
          eventType: 'queue.message.processed',
          correlationId: msg.correlationId,
          payload: { flow, id: msg.id, outcome },
        });
      }
      return { kind: 'ack' };
    } catch (err) {
      const detail = (err as { detail?: string }).detail ?? (err as Error)?.message ?? String(err);
      if (err instanceof IntegrityError) return { kind: 'dead', error: detail };
      if (err instanceof StorageUnavailableError)
        return { kind: 'retry-fixed', delayMs: REGISTRY_RETRY_MS, error: detail };
      // A duplicate held back while its first delivery is in flight (or a correlation open for its key) waits without spending an attempt.
      if (err instanceof HeldBackError) return { kind: 'retry-fixed', delayMs: REGISTRY_RETRY_MS, error: detail };
      return { kind: 'retry', error: detail, policy: loaded.ir.queue };
    }
  }

  /** The flow's mask for a traced submission; the global list when the flow cannot be read (it need not exist for /enqueue). */
  #maskOf(tenant: string, flow: string) {
    try {
      const loaded = this.#deps.loadFlow(tenant, flow);
      return loaded === undefined ? undefined : maskOf(loaded.ir);
    } catch {
      return undefined;
    }
  }

  #traceSafe(tenant: string, flow: string): boolean {
    try {
      return this.#deps.traceEnabled(tenant, flow);
    } catch {
      return false;
    }
  }

  #recordEnqueued(
    tenant: string,
    flow: string,
    r: AppendResult,
    correlationId: string,
    payload: unknown,
    source: SubmissionSource,
    traced: boolean,
    traceId: string,
  ): void {
    const { events, audit } = this.#deps;
    if (traced)
      events.emit({
        event: 'step_traced',
        correlation_id: correlationId,
        tenant,
        flow,
        step: 'enqueued',
        payload,
        logLevel: 'full',
        mask: this.#maskOf(tenant, flow),
        trace_id: traceId,
      });
    events.emit({
      event: 'queue_enqueued',
      correlation_id: correlationId,
      tenant,
      flow,
      outcome: 'queued',
      payload: { id: r.id, offset: wireOffset(r), source },
      logLevel: 'full',
      trace_id: traceId,
    });
    audit.append({
      tenant,
      eventType: 'queue.message.enqueued',
      correlationId,
      payload: { flow, id: r.id, offset: wireOffset(r), source },
    });
  }

  /** Stops accepting new workers; the store's close() stops the running ones and releases their locks. */
  close(): void {
    this.#state = 'stopped';
  }
}

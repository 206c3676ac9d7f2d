/**
 * The queue use case of `svc serve`: durable submission (/enqueue and queue_publish) and the
 * workers that run the latest version of a flow on each queued message, joining the queue
 * library, the registry loader and the engine. Retry, dead-letter and drop decisions are taken
 * here by error class.
 */
import { IntegrityError, QueueQuotaError } from '../../common/errors.js';
import { failedDeliveryOutcome, msSinceEnqueued, REGISTRY_RETRY_MS } from './delivery-outcome.js';
import { LogThrottle } from '../../common/log-throttle.js';
import type { Logger } from '../../common/logger.js';
import type { SettingName } from '../../common/settings.js';
import { startTrace, traceIdOf, type IncomingTraceContext, type TraceSpan } from '../../common/trace-context/spans.js';
import { maskOf, type LoadedFlow } from '../../engine/index.js';
import { GLOBAL_MASK, type MaskSet } from '../../common/mask.js';
import {
  wireOffset,
  type QueueStore,
  type QueueBacklog,
  type QueueConsumerOptions,
  type QueueMessage,
  type Outcome,
  type AppendResult,
} from '../../queue/index.js';
import type { AuditAppender } from '../../store/audit/audit-thread.js';
import type { EventEmitter } from '../../store/event-log/event-sink.js';
import type { FlowExecutor } from './flow-executor.js';
import { QueuePool, type QueueWait, type WorkerStatus } from './queue-pool.js';
import { QueueQuota } from './queue-quota.js';
import { queueKey } from './worker-slots.js';
import { enqueuedEntry, receiptEntry, type SubmissionSource } from './queue-receipts.js';

export { REGISTRY_RETRY_MS } from './delivery-outcome.js';

export interface QueueWorkersDeps {
  readonly store: QueueStore;
  /** Resolves `latest`; throws IntegrityError (dead-letter) or anything else (registry unreadable: retry at 1 s). */
  loadFlow(tenant: string, name: string): LoadedFlow | undefined;
  /** Platform settings: `max_message_bytes` per request, the pool's settings at construction. */
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

export type { WorkerStatus, QueueWait } from './queue-pool.js';

/** `running` accepts submissions and starts workers; `stopped` after close(). */
export type QueueWorkersState = 'running' | 'stopped';

export class QueueWorkers {
  readonly #deps: QueueWorkersDeps;
  readonly #pool: QueuePool;
  readonly #quota: QueueQuota;
  readonly #refusalLines = new LogThrottle();
  #state: QueueWorkersState = 'running';

  constructor(deps: QueueWorkersDeps) {
    this.#deps = deps;
    // Capacity settings are read once, at startup (spec: Limits).
    const maxWorkers = deps.setting('max_queue_workers');
    this.#pool = new QueuePool({
      store: deps.store,
      limits: {
        maxWorkers,
        maxPerTenant: (deps.perTenantSet?.() ?? true) ? deps.setting('max_queue_workers_per_tenant') : maxWorkers,
        idleMs: deps.setting('queue_worker_idle_ms'),
        turnMs: deps.setting('queue_worker_turn_ms'),
      },
      workerOptions: (tenant, flow) => this.#workerOptions(tenant, flow),
      log: deps.log,
    });
    this.#quota = new QueueQuota({
      limits: {
        maxQueues: deps.setting('max_queues_per_tenant'),
        maxBytes: deps.setting('max_queue_bytes_per_tenant'),
      },
      usage: (tenant) => deps.store.tenantUsage(tenant),
    });
  }

  get state(): QueueWorkersState {
    return this.#state;
  }

  /** Workers this process runs. */
  get workerCount(): number {
    return this.#pool.workerCount;
  }

  /** The queues waiting for a worker's slot with something to deliver, longest first. */
  waiting(): QueueWait[] {
    return this.#pool.waiting();
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
   * /enqueue: appends the message and resolves once it is durable with its
   * `queue.message.enqueued` audit entry: in one transaction on PostgreSQL; on files the record's
   * fdatasync covers both, the record carrying what the entry says (the outbox: QueueStore.receipts),
   * and the entry is chained after. Makes sure the queue is served (its worker runs, or it waits
   * in line for a slot of the pool).
   * @param bodyBytes the request body's size, counted against the tenant's byte bound
   * @throws QueueQuotaError (507) when the tenant's queues reached a bound (nothing is written)
   */
  async enqueue(
    tenant: string,
    flow: string,
    payload: unknown,
    correlationId: string,
    traceContext?: IncomingTraceContext,
    bodyBytes = 0,
  ): Promise<AppendResult> {
    const traced = this.#traceSafe(tenant, flow);
    // The submission's span (a child of the caller's) is what the message carries: the worker's
    // execution becomes its child, in the caller's trace (or a new one started here).
    const span = startTrace(`enqueue ${tenant}/${flow}`, 'producer', traceContext, {
      'svc.tenant': tenant,
      'svc.flow': flow,
      'svc.correlation_id': correlationId,
    });
    const r = await this.#append(tenant, flow, { correlationId, payload }, 'enqueue', span, bodyBytes);
    this.#recordEnqueued(tenant, flow, r, correlationId, payload, 'enqueue', traced, span.traceId);
    this.#serve(tenant, flow);
    return r;
  }

  /**
   * queue_publish: as enqueue; the step fails only when the message cannot be written (every
   * queue with messages is served, by the pool of workers, however many queues there are).
   */
  async publish(
    tenant: string,
    flow: string,
    payload: unknown,
    correlationId: string,
    step: string,
    parentSpan: TraceSpan,
  ): Promise<AppendResult> {
    // A child of the publishing step: the target flow's execution continues the publisher's trace.
    const span = parentSpan.child(`enqueue ${tenant}/${flow}`, 'producer', {
      'svc.tenant': tenant,
      'svc.flow': flow,
      'svc.step': step,
      'svc.correlation_id': correlationId,
    });
    const r = await this.#append(
      tenant,
      flow,
      { correlationId, payload },
      'queue_publish',
      span,
      JSON.stringify(payload).length,
    );
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
    this.#serve(tenant, flow);
    return r;
  }

  /**
   * Appends with the submission span's trace context, ending the span with the write's outcome,
   * once the tenant's queue bounds admit it.
   */
  async #append(
    tenant: string,
    flow: string,
    input: { correlationId: string; payload: unknown },
    source: SubmissionSource,
    span: TraceSpan,
    bodyBytes: number,
  ): Promise<AppendResult> {
    try {
      try {
        const admitting = this.#quota.admit(tenant, flow, bodyBytes);
        if (admitting !== undefined) await admitting;
      } catch (err) {
        if (err instanceof QueueQuotaError) this.#reportRefusal(tenant, err);
        throw err;
      }
      const { store } = this.#deps;
      const r = await store.append(tenant, flow, {
        ...input,
        traceparent: span.traceparent(),
        tracestate: span.tracestate,
        // PostgreSQL commits the entry with the message; on files the record carries it (the outbox).
        receipt:
          store.receipts === 'with-message'
            ? (id) => enqueuedEntry(tenant, flow, input.correlationId, source, { storage: 'row', id })
            : undefined,
        receiptSource: store.receipts === 'outbox' ? source : undefined,
      });
      span.end();
      return r;
    } catch (err) {
      span.end(err);
      throw err;
    }
  }

  /** Tells the operator a tenant reached a queue bound: one line per tenant per 10 s at most. */
  #reportRefusal(tenant: string, err: QueueQuotaError): void {
    // Kinds are registered tenants (the gate let the submission through): the map stays small.
    const line = this.#refusalLines.admit(tenant);
    if (line === undefined) return;
    const more = line.heldBack > 0 ? ` (${line.heldBack} more since the last such line)` : '';
    this.#deps.log.warn(
      { tenant, held_back: line.heldBack },
      `queue submission refused with 507: ${err.message}${more}`,
    );
  }

  /** Makes sure the queue is served (QueuePool.ensure), reporting a failure to the log. */
  #serve(tenant: string, flow: string): void {
    // The usual case of a busy queue: its worker runs here (one lookup, no promise made).
    if (this.#pool.holds(tenant, flow)) return;
    this.ensureWorker(tenant, flow).catch((err: unknown) =>
      this.#deps.log.error({ err, tenant, flow }, 'queue worker could not be started'),
    );
  }

  /**
   * Makes sure the queue is served: its worker runs here, starts now, waits for a slot of the pool,
   * or runs in another live process (the backend's lock; asked again at most once a second, in
   * case that process died).
   */
  ensureWorker(tenant: string, flow: string): Promise<WorkerStatus> {
    return this.#pool.ensure(tenant, flow);
  }

  /**
   * Serves each queue holding messages that has no worker anywhere: at start, the backlog a stopped
   * process left; on a cluster, the queues of a node that died (its lease gone). Each joins the
   * pool's line; retries scheduled later wait until they are due.
   * @returns how many queues joined the line
   */
  adoptOrphans(queues: readonly QueueBacklog[]): number {
    return this.#pool.adopt(queues);
  }

  /** What every worker of this process is given: the delivery handler and its reports. */
  #workerOptions(tenant: string, flow: string): QueueConsumerOptions {
    const key = queueKey(tenant, flow);
    return {
      handler: (msg) => {
        this.#pool.delivering(key);
        return this.#handle(tenant, flow, msg);
      },
      pollIntervalMs: this.#deps.pollIntervalMs ?? 500,
      // A delivery's progress (checkpoint, deleted row) waits for its audit entries to be committed.
      recordsDurable: () => this.#deps.audit.committed(),
      recordsDurableSoon: () => this.#deps.audit.committedSoon(),
      onReceiptRead: (r) => this.#deps.audit.appendCovered(receiptEntry(tenant, flow, r)),
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
          failed_step: f.step,
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
          // The delivery's end: from its enqueue, every attempt and the waits between them.
          duration_ms: msSinceEnqueued(d.message.enqueuedAt),
          failed_step: d.step,
        });
        this.#deps.audit.append({
          tenant,
          eventType: 'queue.message.failed',
          payload: { flow, id: d.message.id, attempts: d.attempts, error: d.error },
        });
      },
      onError: (err) => this.#deps.log.error({ err, tenant, flow }, 'queue worker storage error (retrying)'),
    };
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
        enqueuedAt: msg.enqueuedAt,
      });
      if (!result.filtered) {
        const outcome = result.faultHandled ? 'fault_handled' : 'succeeded';
        // Covered until chained: the delivery's checkpoint waits for it (recordsDurable), so a
        // process dying first delivers the message again instead of passing it without its entry.
        this.#deps.audit.appendCovered({
          tenant,
          eventType: 'queue.message.processed',
          correlationId: msg.correlationId,
          payload: { flow, id: msg.id, outcome },
        });
      }
      return { kind: 'ack' };
    } catch (err) {
      return failedDeliveryOutcome(err, loaded.ir.queue);
    }
  }

  /**
   * The log mask of a queue's flow (its `log_extra_mask_fields` and the global list): for a traced
   * submission, and for every page that shows a queued payload (dead letters). The global list
   * when the flow cannot be read (it need not exist for /enqueue).
   */
  maskOf(tenant: string, flow: string): MaskSet {
    try {
      const loaded = this.#deps.loadFlow(tenant, flow);
      return loaded === undefined ? GLOBAL_MASK : maskOf(loaded.ir);
    } catch {
      return GLOBAL_MASK;
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
        mask: this.maskOf(tenant, flow),
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
    // Committed with the message on PostgreSQL. On files the record's own durable write stands for
    // the entry until it is chained: queued here, and recorded again by a reader of another process
    // (#workerOptions' onReceiptRead), so the acknowledgement does not wait for a second synced write.
    if (this.#deps.store.receipts === 'outbox')
      audit.appendCovered(enqueuedEntry(tenant, flow, correlationId, source, r));
  }

  /** Stops starting workers; the store's close() stops the running ones and releases their locks. */
  close(): void {
    this.#state = 'stopped';
    this.#pool.close();
  }
}

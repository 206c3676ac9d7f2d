/**
 * Runs one example: the flow's compiled IR through the one executor every door uses (validation,
 * templates, CEL, constructs, composition, fault handler, limits), with the example's input, its
 * stubs for every call out, its `now()`, its config and secrets, and nothing else: no server, no
 * state directory, no network, no process environment. A queue example is delivered again after
 * each failure, under the flow's own `queue_*` policy and the queue's own settlement, on a virtual
 * clock, until it is acknowledged or dead-lettered.
 */
import { failureDetail, SvcError, ValidationRejectedError } from '../../common/errors.js';
import { Settings, type SettingName } from '../../common/settings.js';
import {
  encodeOutput,
  envName,
  ExecutionLimiter,
  NULL_EVENTS,
  type EventEmitter,
  type ExecutionProbe,
  type FlowResult,
  type LoadedFlow,
} from '../../engine/index.js';
import { numberedUuids, withAmbient } from '../../expr/ambient.js';
import type { FlowStateStore } from '../../store/contracts/index.js';
import { settlementOf, type QueueMessage } from '../../queue/index.js';
import { failedDeliveryOutcome } from '../runtime/delivery-outcome.js';
import { httpEgressEffect } from '../runtime/effects.js';
import { Correlations } from '../runtime/correlation.js';
import { FlowStateGuard } from '../runtime/dedup-guard.js';
import { Dedup } from '../runtime/dedup.js';
import { FlowExecutor } from '../runtime/flow-executor.js';
import { queuePublishEffect } from '../runtime/queue-publish.js';
import type { DeliverySpec, ExampleOutcome, ExampleSpec } from './example-spec.js';
import { StubbedCalls, type RecordedCall } from './stub-calls.js';

/** A request as the HTTP door reads it: header names lowercase, the body as sent. */
export interface ExampleRequest {
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** An answer as the HTTP door writes it. */
export interface DoorAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body?: string | Buffer;
}

/**
 * The HTTP door's own translation, handed in by the composition (app/ imports no door): /run's
 * parsing and answers (JSON, XML, SOAP in and out, error bodies, SOAP Faults), and what /enqueue
 * stores of a body.
 */
export interface ExampleDoors {
  serveRun(
    executor: FlowExecutor,
    flow: LoadedFlow,
    request: ExampleRequest,
  ): Promise<{ answer: DoorAnswer; result?: FlowResult; error?: unknown }>;
  enqueuedPayload(request: ExampleRequest): unknown;
}

/** What an example did. */
export interface ExampleRun {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** JSON as a value, XML and text as text, null when empty. */
  readonly body: unknown;
  readonly bodyKind: 'json' | 'xml' | 'text' | 'empty';
  readonly outcome: ExampleOutcome;
  readonly faultStep?: string;
  readonly rule?: string;
  /** The failure's cause (handled, answered or dead-lettered). */
  readonly error?: string;
  /** Steps of the example's flow in the order they ran; a called flow's as `flow:step`. */
  readonly steps: string[];
  readonly published: Record<string, unknown[]>;
  readonly calls: RecordedCall[];
  /** A call out no stub answers (the example fails on it). */
  readonly missingStub?: string;
  /** Stubs named for no step that calls out, in this flow or a flow it runs (a typo, most likely). */
  readonly strayStubs: string[];
  /** Queue: delivery attempts, and the delays between them (virtual). */
  readonly attempts?: number;
  readonly retryDelaysMs?: number[];
  /** What each step of `then:` did, in order (only on the example's first step). */
  readonly later?: ExampleRun[];
}

export interface ExampleContext {
  /** Every flow of the run, for call_flow, split and fork: `tenant/flow` -> the flow. */
  readonly flows: ReadonlyMap<string, LoadedFlow>;
  readonly doors: ExampleDoors;
  /** Variables every example starts from (`--env`), below its own. @default none */
  readonly env?: Readonly<Record<string, string>>;
  /** Told of every point reached (coverage). */
  readonly probe?: ExecutionProbe;
  /**
   * A fresh, empty flow-state store for one example (deduplication and correlations), closed after
   * it; the composition hands one in that touches no disk. Without it, flows run unguarded.
   */
  readonly flowState?: () => { readonly store: FlowStateStore; close(): void };
  /**
   * Payload tracing on, its rows (and every other row the executor emits) handed here as the event
   * log would get them: replay reads the candidate's trace as it reads a recording. @default none
   * (an example writes no row: what it did is its result)
   */
  readonly events?: EventEmitter;
}

/** The most deliveries a queue example makes (a policy of more attempts is cut here, and says so). */
const MAX_DELIVERIES = 1000;

export async function runExample(flow: LoadedFlow, spec: ExampleSpec, context: ExampleContext): Promise<ExampleRun> {
  const stubs = new StubbedCalls(spec.stubs);
  // What the step running now did; each delivery (and each passing of time) gets its own.
  let published: Record<string, unknown[]> = {};
  let steps: string[] = [];
  const probe: ExecutionProbe = (ir, step, point) => {
    if (point === 'entered') steps.push(ir === flow.ir ? step : `${ir.flow}:${step}`);
    context.probe?.(ir, step, point);
  };
  const record = (target: string, payload: unknown) => (published[target] ??= []).push(payload);
  // The example's clock: its `now`, moved on by retries and by `then: - after:`.
  const clock = { ms: spec.nowMs };
  const env = exampleEnv(spec, context.env);
  const setting = (name: SettingName): number => Settings[name].defaultValue();
  const egress = httpEgressEffect(setting, { env, dispatcherFor: stubs.dispatcherFor });
  const loadFlow = (tenant: string, name: string) => context.flows.get(`${tenant}/${name}`);
  // Only a flow that declares keys is guarded (the executor asks no one else), so only it gets a store.
  const guarded = flow.ir.dedup !== undefined || flow.ir.correlation !== undefined;
  const state = guarded ? context.flowState?.() : undefined;
  const now = () => clock.ms;
  const correlations = state === undefined ? undefined : new Correlations(state.store, { stateKey: undefined, now });
  const executor = new FlowExecutor({
    loadFlow,
    setting,
    limiter: new ExecutionLimiter(Number.MAX_SAFE_INTEGER),
    events: context.events ?? NULL_EVENTS,
    traceEnabled: () => context.events !== undefined,
    maxDurationSecs: setting('flow_max_duration_secs'),
    guard:
      state === undefined || correlations === undefined
        ? undefined
        : new FlowStateGuard(
            new Dedup(state.store, {
              defaultWindowHours: setting('dedup_window_hours'),
              leaseMs: setting('flow_max_duration_secs') * 1000 + 60_000,
              stateKey: undefined,
              now,
            }),
            correlations,
          ),
    engine: {
      effects: {
        http_egress: egress.handler,
        queue_publish: queuePublishEffect({
          publish: async (_tenant, target, payload) => {
            record(target, payload);
            return { storage: 'row', id: 0 };
          },
        }),
      },
      loadFlow,
      env,
      probe,
      events: context.events,
    },
  });
  const ambient = { nowMs: now, uuid: numberedUuids() };
  const base = givenCorrelationId(spec) ?? 'example';
  /** One step of the example: what it did, from the stubs' and the queue's records taken since the last. */
  const stepOf = async (work: () => Promise<Done>): Promise<ExampleRun> => {
    published = {};
    steps = [];
    const callsBefore = stubs.calls.length;
    const done = await work();
    return { ...done, steps, published, calls: stubs.calls.slice(callsBefore), strayStubs: [] };
  };
  const deliverOne = (delivery: DeliverySpec, correlationId: string) => async (): Promise<Done> => {
    const request = requestOf(delivery, correlationId);
    if (delivery.door === 'run') return runDoor(executor, flow, request, context.doors);
    if (delivery.door === 'cron') return settle(executor.run(flow, null, { door: 'cron', correlationId, headers: {} }));
    return deliver(executor, flow, context.doors.enqueuedPayload(request), correlationId, clock);
  };
  try {
    return await withAmbient(ambient, async () => {
      const first = await stepOf(deliverOne(spec, base));
      const later: ExampleRun[] = [];
      for (const [i, step] of spec.then.entries()) {
        if (stubs.missing !== undefined) break;
        later.push(
          await stepOf(async () => {
            clock.ms += step.afterMs;
            // The reconcile pass at the new time: correlations past their deadline time out, their on_timeout enqueued.
            await correlations?.reconcile(
              async (_tenant, target, message) => record(target, message.payload),
              () => undefined,
            );
            if (step.delivery === undefined) return idle();
            const id = givenCorrelationId(step.delivery) ?? `${base}-${i + 2}`;
            return deliverOne(step.delivery, id)();
          }),
        );
      }
      const strayStubs = stubs.unusedStubs(callingSteps(context.flows));
      return { ...first, missingStub: stubs.missing, strayStubs, later };
    });
  } finally {
    await Promise.all([egress.close(), stubs.close()]);
    state?.close();
  }
}

/** The correlation id a delivery names: its own key, else X-Correlation-ID, else X-Request-ID (the doors' rule). */
function givenCorrelationId(d: DeliverySpec): string | undefined {
  return d.correlationId ?? d.headers['x-correlation-id'] ?? d.headers['x-request-id'];
}

/** A step of `then:` where only time passed: no answer, nothing ran. */
function idle(): Done {
  return { status: 0, headers: {}, body: null, bodyKind: 'empty', outcome: 'completed' };
}

type Done = Omit<ExampleRun, 'steps' | 'published' | 'calls' | 'missingStub' | 'strayStubs' | 'later'>;

/** The names of the steps that call out (http_egress), in every flow an example may run, fault sections included. */
function callingSteps(flows: ReadonlyMap<string, LoadedFlow>): Set<string> {
  const names = new Set<string>();
  for (const { ir } of flows.values())
    for (const step of [...ir.steps, ...(ir.fault?.steps ?? [])])
      if (step.effects.includes('http_egress')) names.add(step.name);
  return names;
}

/** The example's variables: `--env`, its own `env:`, then its config and secrets by their variable names. */
function exampleEnv(spec: ExampleSpec, base: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, ...spec.env };
  for (const [k, v] of Object.entries(spec.config)) env[envName('SVC_CONFIG_', k)] = v;
  for (const [k, v] of Object.entries(spec.secrets)) env[envName('SVC_SECRET_', k)] = v;
  return env;
}

function requestOf(spec: DeliverySpec, correlationId: string): ExampleRequest {
  const text = typeof spec.input === 'string';
  const body =
    spec.input === null ? Buffer.alloc(0) : Buffer.from(text ? (spec.input as string) : JSON.stringify(spec.input));
  const headers: Record<string, string> = { 'x-correlation-id': correlationId, ...spec.headers };
  const contentType = spec.contentType ?? headers['content-type'];
  headers['content-type'] =
    contentType ??
    (text ? (/^\s*</.test(spec.input as string) ? 'application/xml' : 'text/plain') : 'application/json');
  return { headers, body };
}

async function runDoor(
  executor: FlowExecutor,
  flow: LoadedFlow,
  request: ExampleRequest,
  doors: ExampleDoors,
): Promise<Done> {
  const { answer, result, error } = await doors.serveRun(executor, flow, request);
  return {
    status: answer.status,
    headers: answer.headers,
    ...decoded(answer.headers['content-type'], answer.body),
    ...(result !== undefined ? answered(result) : failed(error)),
  };
}

async function settle(running: Promise<FlowResult>): Promise<Done> {
  try {
    const result = await running;
    const encoded = encodeOutput(result.output);
    const headers =
      encoded.contentType === undefined ? result.headers : { ...result.headers, 'content-type': encoded.contentType };
    return { status: result.status, headers, ...decoded(encoded.contentType, encoded.body), ...answered(result) };
  } catch (err) {
    const status = err instanceof SvcError ? err.status : 500;
    return { status, headers: {}, body: null, bodyKind: 'empty', ...failed(err) };
  }
}

/** A queued message's deliveries until one is acknowledged or it is dead-lettered, on a virtual clock. */
async function deliver(
  executor: FlowExecutor,
  flow: LoadedFlow,
  payload: unknown,
  correlationId: string,
  clock: { ms: number },
): Promise<Done> {
  const startMs = clock.ms;
  const delays: number[] = [];
  let attempt = 1;
  for (;;) {
    try {
      const result = await executor.run(flow, payload, { door: 'queue', correlationId, headers: {} });
      const done = await settle(Promise.resolve(result));
      return { ...done, attempts: attempt, retryDelaysMs: delays };
    } catch (err) {
      const message = {
        id: 1,
        correlationId,
        enqueuedAt: new Date(startMs).toISOString(),
        attempt,
        payload,
        isRetry: attempt > 1,
      };
      const settlement = settlementOf(
        message satisfies QueueMessage,
        failedDeliveryOutcome(err, flow.ir.queue),
        clock.ms,
      );
      if (settlement.kind === 'retry' && attempt < MAX_DELIVERIES) {
        delays.push(settlement.delayMs);
        clock.ms = settlement.dueMs;
        attempt = settlement.attempts + 1;
        continue;
      }
      const status = err instanceof SvcError ? err.status : 500;
      const why = failed(err);
      return {
        status,
        headers: {},
        body: null,
        bodyKind: 'empty',
        ...why,
        outcome: 'dead_lettered',
        attempts: attempt,
        retryDelaysMs: delays,
      };
    }
  }
}

function answered(result: FlowResult): Pick<ExampleRun, 'outcome' | 'faultStep' | 'rule' | 'error'> {
  if (result.filtered) return { outcome: 'filtered' };
  if (!result.faultHandled) return { outcome: 'completed' };
  return { outcome: 'fault_handled', ...causeOf(result.handledError) };
}

function failed(err: unknown): Pick<ExampleRun, 'outcome' | 'faultStep' | 'rule' | 'error'> {
  return { outcome: err instanceof ValidationRejectedError ? 'refused' : 'failed', ...causeOf(err) };
}

function causeOf(err: unknown): Pick<ExampleRun, 'faultStep' | 'rule' | 'error'> {
  if (err === undefined) return {};
  const step = (err as { step?: unknown }).step;
  return {
    faultStep: typeof step === 'string' ? step : undefined,
    rule: err instanceof ValidationRejectedError ? err.message : undefined,
    error: err instanceof SvcError ? failureDetail(err) : err instanceof Error ? err.message : String(err),
  };
}

/** An answer's body as an example compares it: JSON parsed, XML and text as text. */
function decoded(
  contentType: string | undefined,
  body: string | Buffer | undefined,
): Pick<ExampleRun, 'body' | 'bodyKind'> {
  if (body === undefined || body.length === 0) return { body: null, bodyKind: 'empty' };
  const text = typeof body === 'string' ? body : body.toString('utf8');
  const type = (contentType ?? '').toLowerCase();
  if (type.includes('json')) {
    try {
      return { body: JSON.parse(text) as unknown, bodyKind: 'json' };
    } catch {
      return { body: text, bodyKind: 'text' };
    }
  }
  return { body: text, bodyKind: type.includes('xml') ? 'xml' : 'text' };
}

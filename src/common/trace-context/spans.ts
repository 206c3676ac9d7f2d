/**
 * The service's spans (one per execution, step, egress call and queue submission) through
 * `@opentelemetry/api`, the only module that imports it (a lint rule keeps it so). The API records
 * nothing until the operator registers an SDK (docs/observability.md); without one, W3C trace
 * context still flows: the ids are made here, in a pooled buffer, and no API object is created.
 */
import {
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { newSpanId, newTraceId } from './trace-ids.js';
import { formatTraceparent, parseTraceparent, parseTracestate } from './traceparent.js';

/** The instrumentation scope name of every span the service makes. */
export const TRACER_NAME = 'svc';

export type SpanRole = 'server' | 'consumer' | 'producer' | 'client' | 'internal';

const KINDS: Readonly<Record<SpanRole, SpanKind>> = Object.freeze({
  server: SpanKind.SERVER,
  consumer: SpanKind.CONSUMER,
  producer: SpanKind.PRODUCER,
  client: SpanKind.CLIENT,
  internal: SpanKind.INTERNAL,
});

/** Span attributes; undefined values are left out. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** W3C trace context as a delivery brought it: the raw header values (or a queued record's copies). */
export interface IncomingTraceContext {
  readonly traceparent?: string | undefined;
  readonly tracestate?: string | undefined;
}

/** One span of the service, recorded by an SDK or only carrying ids. */
export interface TraceSpan {
  /** The trace's id (32 hex digits): the caller's, or a new one. Recorded in the log rows. */
  readonly traceId: string;
  /** The caller's `tracestate`, validated, passed on unchanged (the service adds no entry). */
  readonly tracestate: string | undefined;
  /**
   * True when an OpenTelemetry SDK made this span: its children and attributes are worth making.
   * False: nothing records them, so callers skip intermediate spans (their ids would reach no one).
   */
  readonly sdk: boolean;
  /** `traceparent` naming this span as the parent of an outgoing call or a queued message. */
  traceparent(): string;
  /** Starts a child span. */
  child(name: string, role: SpanRole, attributes: SpanAttributes): TraceSpan;
  setAttribute(key: string, value: string | number | boolean): void;
  /** Ends the span, with status ERROR when `error` is given, else OK. Only the first call counts. */
  end(error?: unknown): void;
}

/**
 * Starts the span of a delivery: a child of the caller's span when `incoming.traceparent` is valid
 * W3C Trace Context, else the root of a new trace (an invalid header is ignored, never refused).
 */
export function startTrace(
  name: string,
  role: SpanRole,
  incoming: IncomingTraceContext | undefined,
  attributes: SpanAttributes,
): TraceSpan {
  const parent = parseTraceparent(incoming?.traceparent);
  // W3C: tracestate is read only beside a valid traceparent.
  const tracestate = parent === undefined ? undefined : parseTracestate(incoming?.tracestate);
  const tracer = sdkTracer();
  if (tracer !== undefined) {
    const parentContext =
      parent === undefined
        ? ROOT_CONTEXT
        : trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parent.traceId,
            spanId: parent.spanId,
            traceFlags: parent.flags,
            isRemote: true,
            ...(tracestate === undefined ? {} : { traceState: createTraceState(tracestate) }),
          });
    const span = guarded(() =>
      tracer.startSpan(name, { kind: KINDS[role], attributes: defined(attributes) }, parentContext),
    );
    if (span !== undefined && isSpanContextValid(span.spanContext())) return new SdkSpan(tracer, span, tracestate);
  }
  return new IdOnlySpan(parent?.traceId ?? newTraceId(), parent?.flags ?? 0, tracestate);
}

/** A span of a new trace that no SDK records, for a run no door started (engine tests, tools). */
export function detachedSpan(): TraceSpan {
  return new IdOnlySpan(newTraceId(), 0, undefined);
}

/** The trace id a `traceparent` names, or undefined when it is not valid W3C Trace Context. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  return parseTraceparent(traceparent)?.traceId;
}

/** Whether an OpenTelemetry SDK has registered a tracer provider (for the boot output). */
export function sdkRegistered(): boolean {
  return sdkTracer() !== undefined;
}

/**
 * Asks the registered SDK, if any, to export the spans it still holds (`forceFlush`, an SDK
 * method outside the API), so that a shutdown loses none of them. At most `timeoutMs`.
 */
export async function flushSpans(timeoutMs = 5000): Promise<void> {
  const provider = trace.getTracerProvider() as TracerProvider & { getDelegate?(): unknown };
  const sdk = (typeof provider.getDelegate === 'function' ? provider.getDelegate() : provider) as {
    forceFlush?(): Promise<unknown>;
  };
  if (typeof sdk.forceFlush !== 'function') return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()));
  try {
    await Promise.race([sdk.forceFlush().then(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The SDK's tracer, or undefined when none is registered. The API's global provider is its own
 * proxy until an SDK registers: the proxy's `getDelegateTracer` then answers undefined without
 * making a span or a context, which keeps the no-SDK request path to a header read and an id.
 * A provider registered through another copy of the API is asked through the same duck type.
 */
function sdkTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider() as TracerProvider & {
    getDelegateTracer?(name: string): Tracer | undefined;
  };
  return typeof provider.getDelegateTracer === 'function'
    ? provider.getDelegateTracer(TRACER_NAME)
    : provider.getTracer(TRACER_NAME);
}

/**
 * Runs a call into the SDK; a throw (an SDK defect) gives undefined. Tracing must never fail or
 * leak a delivery: the executor starts the span between taking an execution slot and the `try`
 * that gives it back.
 */
function guarded<T>(call: () => T): T | undefined {
  try {
    return call();
  } catch {
    return undefined;
  }
}

function defined(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const key in attributes) if (attributes[key] !== undefined) out[key] = attributes[key];
  return out;
}

/** `error.type` (OpenTelemetry semantic conventions): the service's error code, else the class name. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : typeof error;
}

function errorMessage(error: unknown): string {
  const detail = (error as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return detail;
  return error instanceof Error ? error.message : String(error);
}

/** A span an SDK made (recorded, or sampled out with real ids). Children are made with it as their explicit parent. */
class SdkSpan implements TraceSpan {
  readonly traceId: string;
  readonly tracestate: string | undefined;
  readonly sdk = true;
  readonly #tracer: Tracer;
  readonly #span: Span;
  #ended = false;

  constructor(tracer: Tracer, span: Span, tracestate: string | undefined) {
    this.#tracer = tracer;
    this.#span = span;
    const sc = span.spanContext();
    this.traceId = sc.traceId;
    // The SDK copies the parent's trace state into its children; an entry it added wins.
    this.tracestate = sc.traceState?.serialize() || tracestate;
  }

  traceparent(): string {
    const sc = this.#span.spanContext();
    return formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags);
  }

  child(name: string, role: SpanRole, attributes: SpanAttributes): TraceSpan {
    // The parent is passed explicitly, so no context manager (AsyncLocalStorage) is needed.
    const span = guarded(() =>
      this.#tracer.startSpan(
        name,
        { kind: KINDS[role], attributes: defined(attributes) },
        trace.setSpan(ROOT_CONTEXT, this.#span),
      ),
    );
    if (span !== undefined && isSpanContextValid(span.spanContext()))
      return new SdkSpan(this.#tracer, span, this.tracestate);
    return new IdOnlySpan(this.traceId, this.#span.spanContext().traceFlags, this.tracestate);
  }

  setAttribute(key: string, value: string | number | boolean): void {
    guarded(() => this.#span.setAttribute(key, value));
  }

  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    const span = this.#span;
    guarded(() => {
      if (error === undefined) {
        span.setStatus({ code: SpanStatusCode.OK });
      } else {
        span.setAttribute('error.type', errorType(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
      }
      span.end();
    });
  }
}

/**
 * A span no SDK records: it carries the trace id, the caller's flags and trace state, and makes
 * its own span id only when asked for a `traceparent` (an egress call or a queued message).
 */
class IdOnlySpan implements TraceSpan {
  readonly traceId: string;
  readonly tracestate: string | undefined;
  readonly sdk = false;
  readonly #flags: number;
  #spanId: string | undefined;

  constructor(traceId: string, flags: number, tracestate: string | undefined) {
    this.traceId = traceId;
    this.#flags = flags;
    this.tracestate = tracestate;
  }

  traceparent(): string {
    this.#spanId ??= newSpanId();
    return formatTraceparent(this.traceId, this.#spanId, this.#flags);
  }

  child(): TraceSpan {
    return new IdOnlySpan(this.traceId, this.#flags, this.tracestate);
  }

  setAttribute(): void {}

  end(): void {}
}

/**
 * An in-memory OpenTelemetry tracer provider, written against @opentelemetry/api alone (what an SDK
 * implements): every span is recorded with its ids, parent, kind, attributes and status. Tests
 * register it in process, or preload it into `svc serve` (otel-preload.ts).
 */
import { randomBytes } from 'node:crypto';
import {
  context as otelContext,
  isSpanContextValid,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type SpanAttributeValue,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

export interface RecordedSpan {
  name: string;
  /** The SpanKind name: SERVER, CLIENT, CONSUMER, PRODUCER, INTERNAL. */
  kind: string;
  traceId: string;
  spanId: string;
  /** The parent's span id, local or remote; undefined for a root span. */
  parentSpanId: string | undefined;
  parentIsRemote: boolean;
  traceState: string | undefined;
  attributes: Attributes;
  status: { code: 'UNSET' | 'OK' | 'ERROR'; message?: string };
  ended: boolean;
  /** The instrumentation scope that made it. */
  scope: string;
}

const STATUS_NAMES = {
  [SpanStatusCode.UNSET]: 'UNSET',
  [SpanStatusCode.OK]: 'OK',
  [SpanStatusCode.ERROR]: 'ERROR',
} as const;

class RecordingSpan implements Span {
  readonly #context: SpanContext;
  readonly #record: RecordedSpan;
  readonly #onEnd: (span: RecordedSpan) => void;

  constructor(sc: SpanContext, record: RecordedSpan, onEnd: (span: RecordedSpan) => void) {
    this.#context = sc;
    this.#record = record;
    this.#onEnd = onEnd;
  }

  spanContext(): SpanContext {
    return this.#context;
  }

  setAttribute(key: string, value: SpanAttributeValue): this {
    if (!this.#record.ended) this.#record.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const [k, v] of Object.entries(attributes)) if (v !== undefined) this.setAttribute(k, v);
    return this;
  }

  addEvent(): this {
    return this;
  }

  addLink(): this {
    return this;
  }

  addLinks(): this {
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (!this.#record.ended)
      this.#record.status = {
        code: STATUS_NAMES[status.code],
        ...(status.message === undefined ? {} : { message: status.message }),
      };
    return this;
  }

  updateName(name: string): this {
    this.#record.name = name;
    return this;
  }

  end(): void {
    if (this.#record.ended) return;
    this.#record.ended = true;
    this.#onEnd(this.#record);
  }

  isRecording(): boolean {
    return !this.#record.ended;
  }

  recordException(): void {}
}

class RecordingTracer implements Tracer {
  readonly #scope: string;
  readonly #provider: RecordingTracerProvider;

  constructor(scope: string, provider: RecordingTracerProvider) {
    this.#scope = scope;
    this.#provider = provider;
  }

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = otelContext.active()): Span {
    const parent = options.root ? undefined : trace.getSpanContext(ctx);
    const hasParent = parent !== undefined && isSpanContextValid(parent);
    const sc: SpanContext = {
      traceId: hasParent ? parent.traceId : randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      traceFlags: TraceFlags.SAMPLED,
      ...(hasParent && parent.traceState !== undefined ? { traceState: parent.traceState } : {}),
    };
    const record: RecordedSpan = {
      name,
      kind: SpanKind[options.kind ?? SpanKind.INTERNAL],
      traceId: sc.traceId,
      spanId: sc.spanId,
      parentSpanId: hasParent ? parent.spanId : undefined,
      parentIsRemote: hasParent ? parent.isRemote === true : false,
      traceState: sc.traceState?.serialize(),
      attributes: { ...options.attributes },
      status: { code: 'UNSET' },
      ended: false,
      scope: this.#scope,
    };
    this.#provider.spans.push(record);
    return new RecordingSpan(sc, record, (s) => this.#provider.onEnd?.(s));
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest.pop() as F;
    const [options, ctx] = rest as [SpanOptions | undefined, Context | undefined];
    const span = this.startSpan(name, options, ctx);
    return otelContext.with(trace.setSpan(ctx ?? otelContext.active(), span), () => fn(span)) as ReturnType<F>;
  }
}

/** Records every span of every tracer it hands out, in start order. */
export class RecordingTracerProvider implements TracerProvider {
  readonly spans: RecordedSpan[] = [];
  /** Called once per span as it ends. */
  onEnd: ((span: RecordedSpan) => void) | undefined;

  getTracer(name: string): Tracer {
    return new RecordingTracer(name, this);
  }

  /** Makes it the global provider (what an SDK's `register()` does); false when one is already set. */
  register(): boolean {
    return trace.setGlobalTracerProvider(this);
  }

  /** Removes the global provider again (the API's `disable`). */
  static unregister(): void {
    trace.disable();
  }
}

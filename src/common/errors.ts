/** The one catalogue of service errors: stable codes, their HTTP status and wire message. */
import { JSON_MAX_DEPTH } from './json-depth.js';

export const ErrorCodes = {
  SVC_ERR_INVALID_NAME: 400,
  SVC_ERR_INVALID_INPUT: 400,
  SVC_ERR_UNAUTHORIZED: 401,
  SVC_ERR_SIGNATURE_MISMATCH: 401,
  SVC_ERR_FORBIDDEN: 403,
  SVC_ERR_NOT_FOUND: 404,
  SVC_ERR_TENANT_NOT_FOUND: 404,
  SVC_ERR_CONFLICT: 409,
  SVC_ERR_PAYLOAD_TOO_LARGE: 413,
  /** The body did not arrive within `request_body_timeout_secs` of reading it starting (a slow client). */
  SVC_ERR_REQUEST_TIMEOUT: 408,
  SVC_ERR_UNPROCESSABLE: 422,
  SVC_ERR_RATE_LIMITED: 429,
  SVC_ERR_INTERNAL: 500,
  SVC_ERR_INTEGRITY: 500,
  SVC_ERR_FLOW_FAILED: 500,
  SVC_ERR_FAULT_HANDLER_FAILED: 500,
  SVC_ERR_FLOW_TIMEOUT: 500,
  SVC_ERR_EGRESS_FAILED: 502,
  SVC_ERR_BUSY: 503,
  SVC_ERR_STORAGE_UNAVAILABLE: 503,
  /** The server is closing: new requests are refused (the connection is closed after the answer). */
  SVC_ERR_SHUTTING_DOWN: 503,
  // Appended by the SOAP / XML / egress work (issue 5).
  SVC_ERR_INVALID_XML: 400,
  SVC_ERR_SOAP_MALFORMED: 400,
  /** An outbound response passed its size ceiling (the spec's Limits table: over the cap gives 413). */
  SVC_ERR_EGRESS_TOO_LARGE: 413,
  /**
   * A tenant's queues reached `max_queues_per_tenant` or `max_queue_bytes_per_tenant`: the message
   * is not stored (WebDAV's Insufficient Storage, RFC 4918). Not a 503: nothing is busy, and it
   * passes only as the tenant's own workers drain its queues.
   */
  SVC_ERR_QUEUE_QUOTA: 507,
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

export interface SvcErrorOptions {
  cause?: unknown;
  /** Extra JSON fields placed in the HTTP body beside `error` (e.g. `step`, `limit_secs`). */
  body?: Record<string, unknown>;
  /** Extra response headers (e.g. `Retry-After`). */
  headers?: Record<string, string>;
}

/** Base of every error the service raises on purpose; each door maps it to its wire form. */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly body: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, opts: SvcErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = ErrorCodes[code];
    this.body = opts.body;
    this.headers = opts.headers;
  }
}

/** A stored artifact whose bytes no longer match their content address. */
export class IntegrityError extends SvcError {
  constructor(message: string) {
    super('SVC_ERR_INTEGRITY', message);
    this.name = 'IntegrityError';
  }
}

/** Storage could not be reached or read; callers retry rather than fail permanently. */
export class StorageUnavailableError extends SvcError {
  constructor(message: string, cause?: unknown) {
    super('SVC_ERR_STORAGE_UNAVAILABLE', message, { cause });
    this.name = 'StorageUnavailableError';
  }
}

/**
 * A delivery held back by the flow-state guard while another with the same key is under way: a
 * duplicate whose first delivery is still in flight, or a correlation already open for its key
 * (409). Later it may pass: the queue worker tries again without spending an attempt.
 */
export class HeldBackError extends SvcError {
  /** The delivery it waits for (a duplicate's first delivery), for the log; the caller reads it in a header. */
  readonly firstCorrelationId: string | undefined;
  constructor(message: string, opts: SvcErrorOptions & { firstCorrelationId?: string } = {}) {
    super('SVC_ERR_CONFLICT', message, opts);
    this.name = 'HeldBackError';
    this.firstCorrelationId = opts.firstCorrelationId;
  }
}

/**
 * A submission refused because the tenant's queues reached one of their bounds (app/runtime/queue-quota.ts):
 * the message is not written; the text names the bound and the setting that sets it.
 */
export class QueueQuotaError extends SvcError {
  constructor(message: string) {
    super('SVC_ERR_QUEUE_QUOTA', message);
    this.name = 'QueueQuotaError';
  }
}

/** Raised by operator commands; only main.ts turns it into a process exit. */
export class ExitError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'ExitError';
  }
}

/**
 * Errors a flow execution raises. Their wire messages are fixed by the spec; the detail an operator
 * needs (which step, why) rides on `step` and `detail` for the operational log, never on the wire.
 */
export class FlowError extends SvcError {
  /** The step that failed, when known (the fault handler reports it as `fault_step`). */
  readonly step: string | undefined;
  /** Operator-facing explanation for the operational log (never sent on the wire). */
  readonly detail: string;
  /** `ctx.soap_fault_code` / `ctx.soap_fault_string` as the flow had set them when it failed (SOAP door). */
  soapFault: { code?: string; string?: string } | undefined;

  constructor(code: ErrorCode, message: string, step: string | undefined, detail: string, opts: SvcErrorOptions = {}) {
    super(code, message, opts);
    this.name = 'FlowError';
    this.step = step;
    this.detail = detail;
    this.soapFault = undefined;
  }
}

/**
 * The operator's text of a failure: a flow error's detail (which step, why); a storage failure's
 * fixed text with what the storage said; else the message. The log's `reason` and a fault
 * handler's `fault_error` are this text.
 */
export function failureDetail(err: SvcError): string {
  if (err instanceof FlowError) return err.detail;
  if (err instanceof StorageUnavailableError && err.cause instanceof Error)
    return `${err.message}: ${err.cause.message}`;
  if (err instanceof HeldBackError && err.firstCorrelationId !== undefined)
    return `${err.message} (first delivery ${err.firstCorrelationId})`;
  return err.message;
}

/**
 * The step a failure names (a flow error's `step`, or any error carrying one), for the log's
 * `failed_step`; undefined when it names none (a storage failure, a body that could not be read).
 */
export function failedStepOf(err: unknown): string | undefined {
  const step = err !== null && typeof err === 'object' ? (err as { step?: unknown }).step : undefined;
  return typeof step === 'string' ? step : undefined;
}

/** A `validate` rule was false: 400 (syntactic) or 422 (semantic), body `{"error","step"}` exactly. */
export class ValidationRejectedError extends FlowError {
  readonly kind: 'syntactic' | 'semantic';
  constructor(kind: 'syntactic' | 'semantic', message: string, step: string) {
    super(kind === 'syntactic' ? 'SVC_ERR_INVALID_INPUT' : 'SVC_ERR_UNPROCESSABLE', message, step, message, {
      body: { error: message, step },
    });
    this.name = 'ValidationRejectedError';
    this.kind = kind;
  }
}

/** A defect in the flow (an expression that fails, a missing handler, runaway recursion): 500. */
export class FlowDefectError extends FlowError {
  constructor(step: string | undefined, detail: string, cause?: unknown) {
    super('SVC_ERR_FLOW_FAILED', 'flow execution failed', step, detail, { cause });
    this.name = 'FlowDefectError';
  }
}

/** A flow defect of an expression: a CEL rule, condition, template or ntd that failed or gave the wrong type (500). */
export class ExpressionError extends FlowDefectError {
  constructor(step: string, detail: string, cause?: unknown) {
    super(step, detail, cause);
    this.name = 'ExpressionError';
  }
}

/** A call out of the flow (an effect) failed: 502. The queue worker retries on this class. */
export class EgressError extends FlowError {
  /** What the backend answered, when a response arrived (status, headers, SOAP fault). */
  readonly details: EgressErrorDetails | undefined;
  constructor(step: string | undefined, detail: string, cause?: unknown, details?: EgressErrorDetails) {
    super('SVC_ERR_EGRESS_FAILED', 'flow execution failed', step, detail, { cause });
    this.name = 'EgressError';
    this.details = details;
  }
}

/** The `## Fault:` handler itself failed: 500 `fault handler failed`. */
export class FaultHandlerFailedError extends FlowError {
  constructor(step: string | undefined, detail: string, cause?: unknown) {
    super('SVC_ERR_FAULT_HANDLER_FAILED', 'fault handler failed', step, detail, { cause });
    this.name = 'FaultHandlerFailedError';
  }
}

/** The execution ran past `flow_max_duration_secs` (checked between steps): 500 with `limit_secs`. */
export class FlowTimeoutError extends FlowError {
  readonly limitSecs: number;
  constructor(step: string, limitSecs: number) {
    const message = 'flow exceeded its maximum duration';
    super('SVC_ERR_FLOW_TIMEOUT', message, step, `${message} (${limitSecs} s) before step '${step}'`, {
      body: { error: message, step, limit_secs: limitSecs },
    });
    this.name = 'FlowTimeoutError';
    this.limitSecs = limitSecs;
  }
}

/**
 * The one 404 for a flow: a missing flow, and the gate's unregistered or disabled tenant, which
 * must be indistinguishable from it.
 */
export function flowNotFound(tenant: string, flow: string): SvcError {
  return new SvcError('SVC_ERR_NOT_FOUND', `flow '${tenant}/${flow}' not found`);
}

/** The 400 for a tenant or flow name breaking the name rule, on every door. */
export function invalidFlowIdentifier(): SvcError {
  return new SvcError('SVC_ERR_INVALID_NAME', 'invalid flow identifier');
}

/**
 * The 400 for a JSON body nesting deeper than JSON_MAX_DEPTH, the same on every route that takes
 * client JSON (/run, /enqueue, connector events), refused before the body is parsed.
 */
export function jsonBodyTooDeep(): SvcError {
  return new SvcError('SVC_ERR_INVALID_INPUT', `JSON body nests deeper than ${JSON_MAX_DEPTH} levels`);
}

/** The 503 for a request that arrives while the server closes. */
export function shuttingDown(): SvcError {
  return new SvcError('SVC_ERR_SHUTTING_DOWN', 'server is shutting down');
}

/** The message every door (HTTP body, SOAP faultstring, gRPC details) shows for an error that reaches a caller. */
export const INTERNAL_MESSAGE = 'internal error';

/**
 * What a caller may read of an error, the same on every door: an SvcError's wire message, except an
 * integrity failure (its text names artifacts and hashes, for the operator log only); anything that
 * is not an SvcError is `internal error` (its text may hold internals).
 */
export function publicMessage(err: unknown): string {
  if (!(err instanceof SvcError) || err instanceof IntegrityError) return INTERNAL_MESSAGE;
  return err.message;
}

/**
 * The JSON body a door sends for an error: `{"ok":false,"error":<public message>}` plus any extra
 * fields, except the flow answers whose body the spec fixes exactly (a validate rejection, the time limit).
 */
export function errorBody(err: SvcError): Record<string, unknown> {
  if (err instanceof ValidationRejectedError || err instanceof FlowTimeoutError) return { ...err.body };
  return { ok: false, error: publicMessage(err), ...err.body };
}

/** A request or response document that is not acceptable XML (malformed, DTD, too deep, too big). */
export class XmlError extends SvcError {
  constructor(message: string, cause?: unknown) {
    super('SVC_ERR_INVALID_XML', message, { cause });
    this.name = 'XmlError';
  }
}

/** An inbound SOAP request whose envelope cannot be used; the door answers 400 with a SOAP Fault. */
export class SoapEnvelopeError extends SvcError {
  constructor(
    message: string,
    readonly soapVersion: '1.1' | '1.2',
    cause?: unknown,
  ) {
    super('SVC_ERR_SOAP_MALFORMED', message, { cause });
    this.name = 'SoapEnvelopeError';
  }
}

export interface EgressErrorDetails {
  /** The failing step. */
  readonly step: string;
  /** The backend's HTTP status, when a response arrived. */
  readonly upstreamStatus?: number;
  /** Response headers of the backend, when a response arrived. */
  readonly upstreamHeaders?: Record<string, string>;
  /** SOAP Fault code/string from the backend, when it answered with a Fault. */
  readonly faultCode?: string;
  readonly faultString?: string;
  /** True when no answer came in time (connect or read timeout). */
  readonly timedOut?: boolean;
}

/** An outbound response passed its size ceiling; reading stopped at the ceiling and the socket was dropped. */
export class EgressTooLargeError extends FlowError {
  constructor(
    step: string,
    readonly limitBytes: number,
  ) {
    super(
      'SVC_ERR_EGRESS_TOO_LARGE',
      'payload reached size limit',
      step,
      `step '${step}': backend response passed the ${limitBytes}-byte ceiling and was abandoned`,
    );
    this.name = 'EgressTooLargeError';
  }
}

/** A step's configuration cannot be used at run time (e.g. an unset `${VAR}` in an endpoint). */
export class StepConfigError extends FlowError {
  constructor(step: string, detail: string) {
    super('SVC_ERR_FLOW_FAILED', 'flow execution failed', step, detail);
    this.name = 'StepConfigError';
  }
}

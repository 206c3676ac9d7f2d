/** The one catalogue of service errors: stable codes, their HTTP status and wire message. */

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
  // Appended by the SOAP / XML / egress work (issue 5).
  SVC_ERR_INVALID_XML: 400,
  SVC_ERR_SOAP_MALFORMED: 400,
  /** An outbound response passed its size ceiling (the spec's Limits table: over the cap gives 413). */
  SVC_ERR_EGRESS_TOO_LARGE: 413,
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

/** Raised by operator commands; only main.ts turns it into a process exit. */
export class ExitError extends Error {
  constructor(readonly exitCode: number, message: string) {
    super(message);
    this.name = 'ExitError';
  }
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
}

/**
 * An outbound call of an `http_egress` step failed (non-2xx, SOAP Fault, timeout, connection,
 * TLS). `message` names the step and the cause for logs and DLQ rows; the door answers 502
 * `flow execution failed`.
 */
export class EgressError extends SvcError {
  readonly details: EgressErrorDetails;
  constructor(message: string, details: EgressErrorDetails, cause?: unknown) {
    super('SVC_ERR_EGRESS_FAILED', message, { cause });
    this.name = 'EgressError';
    this.details = details;
  }
}

/** An outbound response passed its size ceiling; reading stopped at the ceiling and the socket was dropped. */
export class EgressTooLargeError extends SvcError {
  constructor(
    readonly step: string,
    readonly limitBytes: number,
  ) {
    super('SVC_ERR_EGRESS_TOO_LARGE', `step '${step}': backend response passed the ${limitBytes}-byte ceiling and was abandoned`);
    this.name = 'EgressTooLargeError';
  }
}

/** A step's configuration cannot be used at run time (e.g. an unset `${VAR}` in an endpoint). */
export class StepConfigError extends SvcError {
  constructor(
    readonly step: string,
    message: string,
  ) {
    super('SVC_ERR_FLOW_FAILED', message);
    this.name = 'StepConfigError';
  }
}

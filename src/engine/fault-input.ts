/**
 * What a `## Fault:` section reads as `ctx.input`: the spec's three fields and, beyond the spec
 * (docs/flow-language.md, "Fault handlers"), why the step failed as an operator would want to know
 * it: the same text the log's `reason` has for the failure without a handler, the status the error
 * would otherwise have had, its kind, and what the backend answered to a failed call out.
 *
 * None of it is a secret or a masked value: the texts are the errors' operator details, which name
 * steps, rules, statuses and transport errors but never a request's or answer's values (those go
 * to the log only through its masking, and to trace rows).
 */
import {
  EgressError,
  EgressTooLargeError,
  ExpressionError,
  failureDetail,
  ValidationRejectedError,
  type SvcError,
} from '../common/errors.js';

/** What kind of failure the handler answers. */
export type FaultKind =
  /** A `validate` rule was false: `fault_status` 400 (syntactic) or 422 (semantic). */
  | 'validation'
  /** A call out (HTTP, SOAP, OAuth 2.0 token, queue_publish) failed or its backend answered an error. */
  | 'call_out'
  /** A call out got no answer in time (connect or read timeout). */
  | 'timeout'
  /** A CEL expression failed (a missing key, a wrong type) or gave a non-bool to a rule or condition. */
  | 'expression'
  /** Any other defect of the flow: a step's settings, a called flow missing, calls nested too deep. */
  | 'defect';

export interface FaultInput {
  readonly fault_step: string | null;
  readonly fault_error: string;
  readonly fault_correlation_id: string;
  readonly fault_status: number;
  readonly fault_kind: FaultKind;
  /** A call out whose backend answered: its HTTP status. */
  readonly fault_backend_status?: number;
  /** A SOAP call out answered with a Fault: its faultcode (1.1) or Code/Value (1.2). */
  readonly fault_soap_code?: string;
  readonly fault_soap_string?: string;
}

export function faultKindOf(err: SvcError): FaultKind {
  if (err instanceof ValidationRejectedError) return 'validation';
  if (err instanceof EgressError) return err.details?.timedOut === true ? 'timeout' : 'call_out';
  if (err instanceof EgressTooLargeError) return 'call_out';
  if (err instanceof ExpressionError) return 'expression';
  return 'defect';
}

/** The handler's `ctx.input` for `err`, raised by `step` (null when no step was running). */
export function faultInputOf(err: SvcError, step: string | null, correlationId: string): FaultInput {
  const input: {
    -readonly [K in keyof FaultInput]: FaultInput[K];
  } = {
    fault_step: step,
    fault_error: failureDetail(err),
    fault_correlation_id: correlationId,
    fault_status: err.status,
    fault_kind: faultKindOf(err),
  };
  if (err instanceof EgressError && err.details !== undefined) {
    const d = err.details;
    if (d.upstreamStatus !== undefined) input.fault_backend_status = d.upstreamStatus;
    if (d.faultCode !== undefined) input.fault_soap_code = d.faultCode;
    if (d.faultString !== undefined) input.fault_soap_string = d.faultString;
  }
  return input;
}

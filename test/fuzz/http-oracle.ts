/**
 * The fuzzer's verdict on one exchange, from the spec's route tables: which 5xx a route may answer
 * here, and when no answer at all is acceptable. Everything else that is 5xx, silent or cut off is a
 * service defect.
 *
 * The spec's 5xx rows and why only three can hold against the fuzz target:
 * - /run 500 "defect in the flow": only the flow built to fail (its fault handler answers a marker);
 *   every other fuzz flow answers any input, so its 500 would be the service's defect.
 * - /run over SOAP 1.1: a flow's refusal is a Fault with 500 ("SOAP 1.1: 500 always"); soapy's rule.
 * - /run 503 "server busy" (with Retry-After): allowed whenever executions pile up.
 * - 500 storage errors (enqueue, metadata, WSDL, connector), 503 "storage unavailable" of the gate,
 *   500 integrity, 502 (no flow calls out) and 503 "shutting down" (the server runs throughout): their
 *   conditions cannot hold here, so such an answer is a defect too.
 */
import { leavesServerWaiting, type HttpCase } from './http-case.js';
import { ON_PURPOSE_MARKER, SOAPY_RULE_MESSAGE } from './fuzz-target.js';
import type { WireOutcome } from './wire-exchange.js';

/** The spec row a 5xx answer matches, or undefined when it matches none. */
export function specifiedServerError(outcome: Extract<WireOutcome, { kind: 'answer' }>): string | undefined {
  const body = outcome.body.toString('utf8');
  const soapFault = /xml/.test(outcome.headers['content-type'] ?? '') && /:Fault>/.test(body);
  if (outcome.status === 500 && body.includes(ON_PURPOSE_MARKER)) return 'flow failed on purpose';
  if (outcome.status === 500 && soapFault && body.includes(`<faultstring>${SOAPY_RULE_MESSAGE}</faultstring>`))
    return 'SOAP 1.1 fault of a refused rule';
  if (
    outcome.status === 503 &&
    body.includes('server busy: too many flow executions in flight') &&
    outcome.headers['retry-after'] !== undefined
  )
    return 'server busy';
  return undefined;
}

/**
 * Requests larger than this may lose their refusal to a TCP reset: a server that refuses a request
 * while it is still arriving (431 for the head, 413, a parse error in what follows a short
 * Content-Length) answers and closes with unread bytes queued, the kernel resets the connection, and
 * the reset can discard the answer before the client reads it. Node reads 64 KiB at a time. Bytes.
 */
export const RESET_MAY_HIDE_ANSWER_BYTES = 64 * 1024;

/** Undefined when the exchange is within the spec; otherwise what went wrong, in one line. `requestBytes`: the request's size on the wire. */
export function violation(c: HttpCase, outcome: WireOutcome, requestBytes = 0): string | undefined {
  const stillSending = leavesServerWaiting(c);
  if (outcome.kind === 'silent') {
    // The request promised more bytes: waiting for them is right (408 after the body timeout on the
    // routes that read bodies; Node's own request timeout elsewhere).
    return stillSending ? undefined : `no answer within ${outcome.ms} ms to a complete request (hang)`;
  }
  if (outcome.kind === 'closed') {
    // CONNECT has no handler (Node closes); a client that went away or never finished gets no answer;
    // a large request's refusal may be lost to the reset (above).
    const excused = stillSending || c.halfClose || c.method === 'CONNECT' || requestBytes > RESET_MAY_HIDE_ANSWER_BYTES;
    return excused
      ? undefined
      : `connection closed after ${outcome.ms} ms without an answer (${requestBytes} bytes sent)`;
  }
  if (!outcome.complete && !stillSending && requestBytes <= RESET_MAY_HIDE_ANSWER_BYTES)
    return `status ${outcome.status} arrived but its body was cut off after ${outcome.ms} ms`;
  if (c.expect !== undefined && !c.expect.includes(outcome.status)) {
    return `status ${outcome.status} where the spec says ${c.expect.join(' or ')}: ${snippet(outcome.body)}`;
  }
  if (outcome.status >= 500 && specifiedServerError(outcome) === undefined)
    return `status ${outcome.status} (no spec row allows it here): ${snippet(outcome.body)}`;
  return undefined;
}

function snippet(body: Buffer): string {
  const text = body.toString('utf8');
  return JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}...` : text);
}

/** The request pipeline shared by /run, /enqueue, metadata and connector routes: path check and gate. */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidFlowIdentifier, jsonBodyTooDeep, SvcError } from '../../common/errors.js';
import type { IncomingTraceContext } from '../../common/trace-context/spans.js';
import { isValidName } from '../../common/names.js';
import { jsonNestsDeeperThan } from '../../common/json-depth.js';
import type { Gate, GateFlow, GateRoute } from '../../gate/gate.js';
import { signatureMatches, signatureMismatch } from '../../gate/signature.js';
import { refusalMustClose } from './body.js';
import { errorAnswer, sendAnswer, type HttpAnswer } from './answer.js';

export interface FlowParams {
  tenant: string;
  name: string;
}

/**
 * An `onRequest` hook (runs before any body byte is read): path components by the name rule, then
 * the gate unless the server runs with `--no-auth`.
 */
export function gateHook(gate: Gate | undefined, route: GateRoute, flowParam: 'name' | 'flow' = 'name') {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const params = req.params as Record<string, string>;
    try {
      admit(gate, req.raw, params.tenant, params[flowParam], route);
    } catch (refusal) {
      await sendAnswer(reply, refusalAnswer(req.raw, refusal));
    }
  };
}

/**
 * Before any body byte is read: path components by the name rule, then the gate (unless
 * `--no-auth`). Returns the flow the gate read for its scope check (undefined when it read none),
 * so the route does not look it up again; throws the refusal (answered by refusalAnswer).
 */
export function admit<F extends GateFlow>(
  gate: Gate<F> | undefined,
  raw: InboundRequest,
  tenant: string | undefined,
  flow: string | undefined,
  route: GateRoute,
): F | undefined {
  if (!isValidName(tenant) || !isValidName(flow)) throw invalidFlowIdentifier();
  if (gate === undefined) return undefined;
  return gate.check({
    authorization: authorizationOf(raw),
    tenant,
    flow,
    route,
    correlationId: () => givenCorrelationId(raw),
  }).flow;
}

/**
 * The answer to a refusal made before reading the body. It closes the connection when the
 * announced body is unbounded or large (refusalMustClose): otherwise Node would read and discard
 * all of it to reuse the connection, and a refused caller would cost its upload after all. A small
 * declared body is left for Node to discard, which costs less than a new connection.
 */
export function refusalAnswer(raw: InboundRequest, refusal: unknown): HttpAnswer {
  const answer = errorAnswer(refusal);
  return refusalMustClose(raw) ? { ...answer, headers: { ...answer.headers, connection: 'close' } } : answer;
}

/**
 * The request's `Authorization`: Node keeps only the first of duplicates in `headers`, so the raw
 * list is counted (names of 13 characters only are compared); more than one gives them all.
 */
export function authorizationOf(raw: InboundRequest): string | string[] | undefined {
  const list = raw.rawHeaders;
  let values: string[] | undefined;
  let first: string | undefined;
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i]!;
    if (name.length !== 13 || name.toLowerCase() !== 'authorization') continue;
    if (first === undefined) first = list[i + 1];
    else (values ??= [first]).push(list[i + 1]!);
  }
  return values ?? first;
}

/**
 * What the request readers below look at: the headers, as Node parsed them and as they came. A
 * node:http request is one, and a request of the lean front; `svc test` builds one from an example.
 */
export type InboundRequest = Pick<IncomingMessage, 'headers' | 'rawHeaders'>;

/** Under `--secret`, the raw body must carry a matching `X-Svc-Signature`. */
export function checkSignature(secret: string | undefined, body: Buffer, req: InboundRequest): void {
  if (secret === undefined) return;
  const header = req.headers['x-svc-signature'];
  if (!signatureMatches(secret, body, typeof header === 'string' ? header : undefined)) throw signatureMismatch();
}

/** `X-Correlation-ID`, else `X-Request-ID`, else a fresh UUID v4. A repeated header counts once (its first value). */
export function correlationIdOf(req: InboundRequest): string {
  return givenCorrelationId(req) || randomUUID();
}

/** The correlation id the caller sent, if any (no id is made up). */
export function givenCorrelationId(req: InboundRequest): string | undefined {
  // Node joins repeated unknown headers with ", " in `headers`, so the first value of each is read
  // from `rawHeaders` (not `headersDistinct`, which builds a map of every header per request).
  const raw = req.rawHeaders;
  let correlationId: string | undefined;
  let requestId: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (correlationId === undefined && name.length === 16 && name.toLowerCase() === 'x-correlation-id')
      correlationId = raw[i + 1];
    else if (requestId === undefined && name.length === 12 && name.toLowerCase() === 'x-request-id')
      requestId = raw[i + 1];
  }
  return correlationId || requestId || undefined;
}

/**
 * W3C `traceparent` and `tracestate` as sent, or undefined without a `traceparent` (one header
 * lookup on the hot path). Repeated headers arrive joined by commas: an invalid `traceparent`, and
 * the spec's way of combining `tracestate`. Validated by the executor's span.
 */
export function traceContextOf(req: InboundRequest): IncomingTraceContext | undefined {
  const traceparent = req.headers.traceparent;
  if (traceparent === undefined) return undefined;
  const tracestate = req.headers.tracestate;
  return { traceparent: String(traceparent), tracestate: tracestate === undefined ? undefined : String(tracestate) };
}

/** Parses a JSON body; an empty body is `null`; one nesting deeper than JSON_MAX_DEPTH is refused (jsonBodyTooDeep) before parsing. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return null;
  if (jsonNestsDeeperThan(body)) throw jsonBodyTooDeep();
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `malformed JSON body: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/** The media type of a request, lowercased without parameters ('' when absent). */
export function mediaType(req: InboundRequest): string {
  const ct = req.headers['content-type'];
  if (ct === undefined) return '';
  // The usual header is already a bare lowercase type: answered without a copy.
  if (ct === 'application/json') return ct;
  return ct.split(';', 1)[0]!.trim().toLowerCase();
}

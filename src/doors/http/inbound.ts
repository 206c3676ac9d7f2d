/** The request pipeline shared by /run, /enqueue, metadata and connector routes: path check and gate. */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../common/errors.js';
import { isValidName } from '../../common/names.js';
import type { Gate, GateRoute } from '../../gate/gate.js';
import { signatureMatches, signatureMismatch } from '../../gate/signature.js';
import { announcesBody } from './body.js';
import { sendError } from './reply-error.js';

export interface FlowParams {
  tenant: string;
  name: string;
}

export function invalidFlowIdentifier(): SvcError {
  return new SvcError('SVC_ERR_INVALID_NAME', 'invalid flow identifier');
}

/**
 * An `onRequest` hook (runs before any body byte is read): path components by the name rule, then
 * the gate unless the server runs with `--no-auth`.
 */
export function gateHook(gate: Gate | undefined, route: GateRoute, flowParam: 'name' | 'flow' = 'name') {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const params = req.params as Record<string, string>;
    const tenant = params.tenant;
    const flow = params[flowParam];
    if (!isValidName(tenant) || !isValidName(flow)) {
      await refuseUnread(req, reply, invalidFlowIdentifier());
      return;
    }
    if (gate === undefined) return;
    try {
      gate.check({ authorization: req.headers.authorization, tenant, flow, route });
    } catch (err) {
      await refuseUnread(req, reply, err);
    }
  };
}

/**
 * Answers a refusal made before the body was read. With a body announced, the connection closes
 * after the answer: otherwise Node would read and discard the whole body to reuse the connection,
 * and a refused caller would cost its upload after all.
 */
function refuseUnread(req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  if (announcesBody(req.raw)) reply.header('connection', 'close');
  return sendError(reply, err);
}

/** Under `--secret`, the raw body must carry a matching `X-Svc-Signature`. */
export function checkSignature(secret: string | undefined, body: Buffer, req: FastifyRequest): void {
  if (secret === undefined) return;
  const header = req.headers['x-svc-signature'];
  if (!signatureMatches(secret, body, typeof header === 'string' ? header : undefined)) throw signatureMismatch();
}

/** `X-Correlation-ID`, else `X-Request-ID`, else a fresh UUID v4. A repeated header counts once (its first value). */
export function correlationIdOf(req: FastifyRequest): string {
  // Node joins repeated unknown headers with ", " in `headers`; `headersDistinct` keeps them apart.
  const distinct = req.raw.headersDistinct;
  return distinct['x-correlation-id']?.[0] || distinct['x-request-id']?.[0] || randomUUID();
}

/** Parses a JSON body; an empty body is `null`. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return null;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `malformed JSON body: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The media type of a request, lowercased without parameters ('' when absent). */
export function mediaType(req: FastifyRequest): string {
  const ct = req.headers['content-type'];
  return ct === undefined ? '' : ct.split(';', 1)[0]!.trim().toLowerCase();
}

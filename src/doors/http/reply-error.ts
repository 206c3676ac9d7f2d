/** The one place that turns an error into its HTTP wire form. */
import type { FastifyReply } from 'fastify';
import { errorBody, publicMessage, SvcError } from '../../common/errors.js';
import { PAYLOAD_TOO_LARGE } from './body.js';

export interface WireError {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly contentType: string;
  readonly body: string;
}

/**
 * Default body `{"ok":false,"error":"<message>"}`; a rejected validate rule and the time limit have
 * their exact spec shapes (errorBody). 413 is plain text. Anything unexpected is a 500 `internal error`.
 */
export function toWireError(err: unknown): WireError {
  if (!(err instanceof SvcError)) {
    // Fastify's own client errors (bad URL, bad header) say what the caller sent wrong.
    const status = clientErrorStatus(err);
    const message = status !== undefined && err instanceof Error ? err.message : publicMessage(err);
    return {
      status: status ?? 500,
      headers: {},
      contentType: 'application/json',
      body: JSON.stringify({ ok: false, error: message }),
    };
  }
  const headers = { ...(err.headers ?? {}) };
  if (err.status === 413) {
    // The rest of an oversized body is not worth reading: close the connection after answering.
    return {
      status: 413,
      headers: { ...headers, connection: 'close' },
      contentType: 'text/plain; charset=utf-8',
      body: PAYLOAD_TOO_LARGE,
    };
  }
  return { status: err.status, headers, contentType: 'application/json', body: JSON.stringify(errorBody(err)) };
}

/** The 4xx status of one of Fastify's own client errors (bad URL, bad header), else undefined. */
export function clientErrorStatus(err: unknown): number | undefined {
  if (err instanceof SvcError) return undefined;
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' && code >= 400 && code < 500 ? code : undefined;
}

export function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const wire = toWireError(err);
  // A Buffer keeps `application/json` exact (Fastify appends a charset to a JSON string body).
  return reply
    .code(wire.status)
    .headers(wire.headers)
    .header('content-type', wire.contentType)
    .send(Buffer.from(wire.body));
}

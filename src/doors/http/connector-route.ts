/** POST /connector/events/{tenant}/{flow}: a connector reports a received or oversized message. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { jsonBodyTooDeep, SvcError } from '../../common/errors.js';
import { jsonNestsDeeperThan } from '../../common/json-depth.js';
import type { Gate } from '../../gate/gate.js';
import type { EventEmitter } from '../../store/event-log/event-sink.js';
import { readBody } from './body.js';
import { gateHook } from './inbound.js';
import { sendError } from './reply-error.js';

/** The connector body limit; a larger body is reported as invalid JSON (400), not 413. */
export const CONNECTOR_BODY_MAX_BYTES = 64 * 1024;
const EVENT_TYPES: ReadonlySet<string> = new Set(['connector_received', 'connector_oversized']);

export function connectorRoutes(deps: { gate: Gate | undefined; events: EventEmitter; bodyTimeoutMs?: number }) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post<{ Params: { tenant: string; flow: string } }>(
      '/connector/events/:tenant/:flow',
      {
        onRequest: [
          gateHook(deps.gate, 'connector', 'flow'),
          // The body is JSON whatever the Content-Type says (the spec answers only 202, 400 and 500
          // here): Fastify would answer 415 to a missing, empty or unusual type before the route ran.
          async (req) => {
            req.raw.headers['content-type'] = 'application/json';
          },
        ],
      },
      async (req, reply) => {
        try {
          const event = parseConnectorEvent(await readConnectorBody(req.raw, deps.bodyTimeoutMs));
          const payload: Record<string, unknown> = {};
          if (event.message_id !== undefined) {
            payload.message_id = event.message_id;
            if (event.worker_id !== undefined) payload.worker_id = event.worker_id;
            if (event.body_bytes !== undefined) payload.body_bytes = event.body_bytes;
          }
          deps.events.emit({
            event: event.event_type,
            tenant: req.params.tenant,
            flow: req.params.flow,
            correlation_id: event.correlation_id ?? randomUUID(),
            payload,
            logLevel: 'full',
          });
          return reply.code(202).send();
        } catch (err) {
          return sendError(reply, err);
        }
      },
    );
  };
}

interface ConnectorEvent {
  event_type: 'connector_received' | 'connector_oversized';
  correlation_id?: string;
  message_id?: string;
  worker_id?: number;
  body_bytes?: number;
}

function invalid(why: string): SvcError {
  return new SvcError('SVC_ERR_INVALID_INPUT', `invalid JSON: ${why}`);
}

/** The spec answers 202, 400 or 500 here: a body too large or too slow is invalid JSON. */
async function readConnectorBody(raw: Parameters<typeof readBody>[0], timeoutMs: number | undefined): Promise<Buffer> {
  try {
    return await readBody(raw, CONNECTOR_BODY_MAX_BYTES, timeoutMs);
  } catch (err) {
    if (err instanceof SvcError && err.status === 413)
      throw invalid(`the body is larger than ${CONNECTOR_BODY_MAX_BYTES} bytes`);
    if (err instanceof SvcError && err.status === 408) throw invalid(err.message);
    throw err;
  }
}

function parseConnectorEvent(body: Buffer): ConnectorEvent {
  // The same limit and answer as /run: 64 KiB of brackets would parse, but nest far past what any
  // walk of the value (masking, logging) is written for.
  if (jsonNestsDeeperThan(body)) throw jsonBodyTooDeep();
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw invalid(err instanceof Error ? err.message : String(err));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid('the body must be a JSON object');
  const v = value as Record<string, unknown>;
  if (typeof v.event_type !== 'string' || !EVENT_TYPES.has(v.event_type)) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', 'event_type must be "connector_received" or "connector_oversized"');
  }
  const optional = <T>(name: string, type: 'string' | 'number'): T | undefined => {
    if (v[name] === undefined || v[name] === null) return undefined;
    if (typeof v[name] !== type) throw invalid(`${name} must be a ${type}`);
    return v[name] as T;
  };
  return {
    event_type: v.event_type as ConnectorEvent['event_type'],
    correlation_id: optional<string>('correlation_id', 'string'),
    message_id: optional<string>('message_id', 'string'),
    worker_id: optional<number>('worker_id', 'number'),
    body_bytes: optional<number>('body_bytes', 'number'),
  };
}

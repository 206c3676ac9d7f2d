/**
 * The hot routes on plain node:http, ahead of Fastify's router, hooks and reply machinery
 * (measured: Fastify's per-request work was the largest cost of /run after the socket write).
 * POST .../run and POST .../enqueue do exactly what their Fastify routes do (name rule, gate, the
 * shared framework-free handler); every other request goes on to Fastify.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Gate, GateRoute } from '../../gate/gate.js';
import { errorAnswer, writeAnswer, writeAnswerAtTurnEnd } from './answer.js';
import type { FlowRouteHandler } from './flow-route.js';
import { invalidFlowIdentifier } from '../../common/errors.js';
import { admit } from './inbound.js';

const HOT_PATH = /^\/flows\/([^/?#]+)\/([^/?#]+)\/(run|enqueue)(?:\?.*)?$/;

export interface FastPathDeps {
  gate: Gate | undefined;
  run: FlowRouteHandler;
  /** Absent when the server has no queue door. */
  enqueue: FlowRouteHandler | undefined;
  /** True once the server is closing: new requests get 503, as Fastify's own routes do. */
  closing(): boolean;
}

/** Returns a request listener that takes the hot routes and answers false for anything else. */
export function createFastPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const m = HOT_PATH.exec(req.url ?? '');
    if (m === null) return false;
    const route: GateRoute = m[3] === 'run' ? 'run' : 'enqueue';
    const handler = route === 'run' ? deps.run : deps.enqueue;
    if (handler === undefined) return false;
    if (deps.closing()) {
      writeAnswer(res, { status: 503, headers: { 'content-type': 'application/json', connection: 'close' }, body: '{"ok":false,"error":"server is shutting down"}' });
      return true;
    }
    let tenant: string;
    let name: string;
    try {
      tenant = decodeURIComponent(m[1]!);
      name = decodeURIComponent(m[2]!);
    } catch {
      writeAnswer(res, errorAnswer(invalidFlowIdentifier()));
      return true;
    }
    const refusal = admit(deps.gate, req, tenant, name, route);
    if (refusal !== undefined) {
      writeAnswer(res, refusal);
      return true;
    }
    handler(req, tenant, name).then(
      (answer) => writeAnswerAtTurnEnd(res, answer),
      (err: unknown) => writeAnswerAtTurnEnd(res, errorAnswer(err)),
    );
    return true;
  };
}

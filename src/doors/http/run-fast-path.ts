/**
 * The /run hot path on plain node:http, ahead of Fastify's router, hooks and content-type
 * machinery (measured: Fastify's per-request work was the largest cost of /run after the socket
 * write). It does exactly what the Fastify route does (name rule, gate, the shared run handler);
 * every other request goes on to Fastify.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Gate } from '../../gate/gate.js';
import { errorAnswer, writeAnswer } from './answer.js';
import { admit, invalidFlowIdentifier } from './inbound.js';
import type { RunHandler } from './run-handler.js';

const RUN_PATH = /^\/flows\/([^/?#]+)\/([^/?#]+)\/run(?:\?.*)?$/;

export interface FastPathDeps {
  gate: Gate | undefined;
  handler: RunHandler;
  /** True once the server is closing: new requests get 503, as Fastify's own routes do. */
  closing(): boolean;
}

/** Returns a request listener that takes POST .../run and answers false for anything else. */
export function createRunFastPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const m = RUN_PATH.exec(req.url ?? '');
    if (m === null) return false;
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
    const refusal = admit(deps.gate, req, tenant, name, 'run');
    if (refusal !== undefined) {
      writeAnswer(res, refusal);
      return true;
    }
    deps.handler(req, tenant, name).then(
      (answer) => writeAnswer(res, answer),
      (err: unknown) => writeAnswer(res, errorAnswer(err)),
    );
    return true;
  };
}

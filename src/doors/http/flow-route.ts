/**
 * POST /flows/{tenant}/{name}/run and .../enqueue on Fastify. Both are served by the node:http
 * fast path (fast-path.ts) on a listening server; these routes serve the same framework-free
 * handlers to `inject()` and are the fallback. The gate enforces the flow's `required_scope` on
 * /enqueue as on /run (403 before the queue write).
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Gate } from '../../gate/gate.js';
import { sendAnswer, type HttpAnswer } from './answer.js';
import { gateHook, type FlowParams } from './inbound.js';

/** A flow route's work after admission: reads the body itself and answers as plain data. */
export type FlowRouteHandler = (raw: IncomingMessage, tenant: string, name: string) => Promise<HttpAnswer>;

export function flowRoute(route: 'run' | 'enqueue', deps: { gate: Gate | undefined; handler: FlowRouteHandler }) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post<{ Params: FlowParams }>(`/flows/:tenant/:name/${route}`, { onRequest: gateHook(deps.gate, route) }, async (req, reply) =>
      sendAnswer(reply, await deps.handler(req.raw, req.params.tenant, req.params.name)),
    );
  };
}

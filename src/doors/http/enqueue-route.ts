/**
 * POST /flows/{tenant}/{name}/enqueue. Served by the node:http fast path (fast-path.ts) on a
 * listening server; this Fastify route serves the same handler to `inject()` and is the fallback.
 * The gate enforces the flow's `required_scope` here as on /run (403 before the queue write).
 */
import type { FastifyInstance } from 'fastify';
import type { Gate } from '../../gate/gate.js';
import { sendAnswer } from './answer.js';
import type { EnqueueHandler } from './enqueue-handler.js';
import { gateHook, type FlowParams } from './inbound.js';

export function enqueueRoutes(deps: { gate: Gate | undefined; handler: EnqueueHandler }) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post<{ Params: FlowParams }>('/flows/:tenant/:name/enqueue', { onRequest: gateHook(deps.gate, 'enqueue') }, async (req, reply) =>
      sendAnswer(reply, await deps.handler(req.raw, req.params.tenant, req.params.name)),
    );
  };
}

/**
 * POST /flows/{tenant}/{name}/run. Served by the node:http fast path (fast-path.ts) on a
 * listening server; this Fastify route serves the same handler to `inject()` and is the fallback.
 */
import type { FastifyInstance } from 'fastify';
import type { Gate } from '../../gate/gate.js';
import { sendAnswer } from './answer.js';
import { gateHook, type FlowParams } from './inbound.js';
import type { RunHandler } from './run-handler.js';

export function runRoutes(deps: { gate: Gate | undefined; handler: RunHandler }) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post<{ Params: FlowParams }>('/flows/:tenant/:name/run', { onRequest: gateHook(deps.gate, 'run') }, async (req, reply) =>
      sendAnswer(reply, await deps.handler(req.raw, req.params.tenant, req.params.name)),
    );
  };
}

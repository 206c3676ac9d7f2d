/** GET /flows/{tenant}/{name}: metadata of the latest artifact. */
import type { FastifyInstance } from 'fastify';
import type { FlowExecutor } from '../../app/runtime/flow-executor.js';
import type { Gate } from '../../gate/gate.js';
import { gateHook, type FlowParams } from './inbound.js';
import { sendError } from './reply-error.js';

export function metadataRoutes(deps: { gate: Gate | undefined; executor: Pick<FlowExecutor, 'resolve'> }) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.get<{ Params: FlowParams }>(
      '/flows/:tenant/:name',
      { onRequest: gateHook(deps.gate, 'metadata') },
      async (req, reply) => {
        try {
          const flow = deps.executor.resolve(req.params.tenant, req.params.name);
          return reply.send({
            tenant: flow.ir.tenant,
            name: flow.ir.flow,
            version: flow.version,
            hash: flow.hash,
            created_at: flow.created_at,
          });
        } catch (err) {
          return sendError(reply, err);
        }
      },
    );
  };
}

/** POST /flows/{tenant}/{name}/enqueue: durable asynchronous submission, answered 202 once synced. */
import type { FastifyInstance } from 'fastify';
import { SvcError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { xmlToJson } from '../../common/xml.js';
import type { QueueWorkers } from '../../app/queue-workers.js';
import type { Gate } from '../../gate/gate.js';
import { readBody } from './body.js';
import { checkSignature, correlationIdOf, gateHook, mediaType, parseJsonBody, type FlowParams } from './inbound.js';
import { sendError } from './reply-error.js';

export interface EnqueueRouteDeps {
  /** Absent under `--no-auth`. The gate enforces the flow's `required_scope` here as on /run. */
  readonly gate: Gate | undefined;
  readonly secret: string | undefined;
  readonly queues: Pick<QueueWorkers, 'ceiling' | 'enqueue'>;
  /** The operational log (a failed queue write is an operator's problem). */
  readonly log: Logger;
}

/**
 * The spec's order of work: gate (onRequest, before any body byte), size ceiling, signature, parse,
 * correlation id, append + fdatasync, 202. Never refused for execution load: no limiter here.
 */
export function enqueueRoutes(deps: EnqueueRouteDeps) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post<{ Params: FlowParams }>('/flows/:tenant/:name/enqueue', { onRequest: gateHook(deps.gate, 'enqueue') }, async (req, reply) => {
      const { tenant, name } = req.params;
      try {
        const body = await readBody(req.raw, deps.queues.ceiling(tenant, name));
        checkSignature(deps.secret, body, req.raw);
        // XML is flattened to JSON before storage (child elements become keys, the root is dropped).
        const payload = mediaType(req.raw) === 'application/xml' ? xmlToJson(body.toString('utf8')) : parseJsonBody(body);
        const r = await deps.queues.enqueue(tenant, name, payload, correlationIdOf(req.raw)).catch((err: unknown) => {
          // Whatever stopped the write (disk, lock, closed store), the caller's answer is the spec's 500.
          deps.log.error({ err, tenant, flow: name }, 'queue write failed; /enqueue answered 500');
          throw queueWriteFailed(err);
        });
        return reply.code(202).type('application/json').send(`{"queued":true,"offset":${r.offset},"tenant":${JSON.stringify(tenant)},"flow":${JSON.stringify(name)}}`);
      } catch (err) {
        return sendError(reply, err);
      }
    });
  };
}

function queueWriteFailed(cause: unknown): SvcError {
  return new SvcError('SVC_ERR_INTERNAL', 'internal error', { cause });
}

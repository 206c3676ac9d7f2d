/**
 * POST /flows/{tenant}/{name}/enqueue after the gate, in the spec's order: size ceiling, signature,
 * parse, correlation id, append + fdatasync, 202. Framework-free (the node:http fast path writes
 * the answer). Never refused for execution load: no limiter here.
 */
import { QueueQuotaError, SvcError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { LogThrottle } from '../../common/log-throttle.js';
import { xmlToJson } from '../../common/xml.js';
import type { QueueWorkers } from '../../app/runtime/queue-workers.js';
import { wireOffset } from '../../queue/index.js';
import { errorAnswer } from './answer.js';
import type { FlowRouteHandler } from './fast-path.js';
import {
  checkSignature,
  correlationIdOf,
  mediaType,
  parseJsonBody,
  traceContextOf,
  type InboundRequest,
} from './inbound.js';

export interface EnqueueHandlerDeps {
  readonly secret: string | undefined;
  readonly queues: Pick<QueueWorkers, 'ceiling' | 'enqueue'>;
  /** The operational log (a failed queue write is an operator's problem). */
  readonly log: Logger;
  /** `request_body_timeout_secs`, in milliseconds. @default DEFAULT_BODY_TIMEOUT_MS */
  readonly bodyTimeoutMs?: number;
}

const ACCEPTED_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'content-type': 'application/json' });

/**
 * What a submission's body becomes on the queue: XML flattened to JSON (child elements become
 * keys, the root is dropped), anything else parsed as JSON. `svc test`'s queue examples use it too.
 */
export function enqueuedPayload(raw: InboundRequest, body: Buffer): unknown {
  return mediaType(raw) === 'application/xml' ? xmlToJson(body.toString('utf8')) : parseJsonBody(body);
}

export function createEnqueueHandler(deps: EnqueueHandlerDeps): FlowRouteHandler {
  const throttle = new LogThrottle();
  return async (raw, tenant, name) => {
    try {
      const body = await raw.readBody(deps.queues.ceiling(tenant, name), deps.bodyTimeoutMs);
      checkSignature(deps.secret, body, raw);
      const payload = enqueuedPayload(raw, body);
      let offset: number;
      try {
        offset = wireOffset(
          await deps.queues.enqueue(tenant, name, payload, correlationIdOf(raw), traceContextOf(raw), body.length),
        );
      } catch (err) {
        // A tenant's bound reached is the tenant's answer (507, the bound named), not a failed write.
        if (err instanceof QueueQuotaError) throw err;
        // Whatever stopped the write (disk, lock, closed store), the caller's answer is the spec's 500.
        // One line per 10 s at most (a full disk fails every write), with the count held back.
        const line = throttle.admit('queue write failed');
        if (line !== undefined) {
          const more = line.heldBack > 0 ? ` (${line.heldBack} more since the last such line)` : '';
          deps.log.error(
            { err, tenant, flow: name, held_back: line.heldBack },
            `queue write failed; /enqueue answered 500${more}`,
          );
        }
        throw new SvcError('SVC_ERR_INTERNAL', 'internal error', { cause: err });
      }
      return {
        status: 202,
        headers: ACCEPTED_HEADERS,
        body: `{"queued":true,"offset":${offset},"tenant":${JSON.stringify(tenant)},"flow":${JSON.stringify(name)}}`,
      };
    } catch (err) {
      return errorAnswer(err);
    }
  };
}

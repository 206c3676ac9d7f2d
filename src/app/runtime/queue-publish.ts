/** The `queue_publish` effect: puts the step's message on another flow's queue of the same tenant. */
import { EgressError, FlowDefectError, QueueQuotaError } from '../../common/errors.js';
import { isXmlValue } from '../../common/xml-value.js';
import type { EffectCall, EffectHandler } from '../../engine/index.js';
import type { QueueWorkers } from './queue-workers.js';

/**
 * The handler: the message must have a JSON form (an XML value is refused naming the step, a
 * FlowDefectError, 500 class); the correlation id travels with it; the step fails with an
 * EgressError (502 class) when the message cannot be written, a tenant's queue bound included (the
 * spec's /run statuses have no 507: a step that could not hand its message on failed a call out).
 * The step's output is the message itself.
 */
export function queuePublishEffect(queues: Pick<QueueWorkers, 'publish'>): EffectHandler {
  return async (call: EffectCall) => {
    const { step, ir } = call;
    const target = step.queue;
    if (target === undefined)
      throw new FlowDefectError(
        step.name,
        `step '${step.name}' uses queue_publish without a 'queue:' key naming the target flow`,
      );
    if (isXmlValue(call.message)) {
      throw new FlowDefectError(
        step.name,
        `step '${step.name}': queue_publish needs a message with a JSON form, and an XML value has none; render a JSON message with an ntd fence first`,
      );
    }
    const message = call.message === undefined ? null : call.message;
    try {
      await queues.publish(ir.tenant, target, message, call.correlationId, step.name, call.span);
    } catch (err) {
      if (err instanceof QueueQuotaError) throw new EgressError(step.name, `step '${step.name}': ${err.message}`, err);
      throw err;
    }
    return { output: call.message };
  };
}

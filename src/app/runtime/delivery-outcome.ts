/**
 * What a queued message's failed delivery means, decided by the error's class, never its text: a
 * stored artifact that fails its check is dead-lettered at once; storage that cannot be read, or a
 * duplicate held back behind its first delivery, waits a fixed second without spending an attempt;
 * anything else is retried under the flow's own `queue_*` policy. The queue's workers and
 * `svc test`'s queue examples take it from here, so both see the same retries and dead letters.
 */
import { failedStepOf, HeldBackError, IntegrityError, StorageUnavailableError } from '../../common/errors.js';
import type { QueuePolicyIR } from '../../ir/types.js';
import type { Outcome } from '../../queue/index.js';

/** Fixed retry interval when the registry cannot be read (never dead-letters). Milliseconds. */
export const REGISTRY_RETRY_MS = 1000;

export function failedDeliveryOutcome(err: unknown, policy: QueuePolicyIR): Outcome {
  const detail = (err as { detail?: string }).detail ?? (err as Error)?.message ?? String(err);
  if (err instanceof IntegrityError) return { kind: 'dead', error: detail };
  if (err instanceof StorageUnavailableError) return { kind: 'retry-fixed', delayMs: REGISTRY_RETRY_MS, error: detail };
  if (err instanceof HeldBackError) return { kind: 'retry-fixed', delayMs: REGISTRY_RETRY_MS, error: detail };
  // The failing step rides along for the queue_failed and dlq_moved rows (their failed_step).
  return { kind: 'retry', error: detail, policy, step: failedStepOf(err) };
}

/**
 * Milliseconds a queued message has existed, from its `enqueued_at` to `nowMs`: the part of a
 * queued delivery's duration spent waiting (in the queue, between retries). 0 when the time cannot
 * be read, or lies ahead (another node's clock).
 */
export function msSinceEnqueued(enqueuedAt: string | undefined, nowMs: number = Date.now()): number {
  if (enqueuedAt === undefined) return 0;
  const at = Date.parse(enqueuedAt);
  return Number.isNaN(at) ? 0 : Math.max(0, nowMs - at);
}

/** Shapes shared by the queue's files and its callers. */

/** One message as stored in the segment (field names are the file format). */
export interface SegmentRecord {
  readonly id: number;
  readonly correlation_id: string;
  /** ISO 8601 UTC. */
  readonly enqueued_at: string;
  /** Attempts already consumed; 0 for a fresh message. */
  readonly attempts: number;
  /** The body as a JSON value (XML is flattened by the caller before it gets here). */
  readonly payload: unknown;
  /**
   * W3C trace context of the submission, opaque to the queue and handed back on delivery. Absent
   * in records written before it existed, and when the caller gave none.
   */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/** A message's W3C trace context, carried through the queue unread (segment, retry schedule, delivery). */
export interface QueuedTraceContext {
  readonly traceparent?: string | undefined;
  readonly tracestate?: string | undefined;
}

/** What `append` is given. */
export interface AppendInput extends QueuedTraceContext {
  readonly correlationId: string;
  readonly payload: unknown;
  /** @default now */
  readonly enqueuedAt?: string;
}

/** What `append` resolves with once the record is fdatasync'ed. */
export interface AppendResult {
  readonly id: number;
  /** Byte position of the record in the segment (identifies it internally; not a handle). */
  readonly offset: number;
}

/** Retry policy of one message, taken by the caller from the flow's latest version at pick-up. */
export interface RetryPolicy {
  /** Attempts before the message is dead-lettered. @default 3 */
  readonly maxAttempts: number;
  /** Delay after the first failed attempt. Milliseconds. @default 1000 */
  readonly initialDelayMs: number;
  /** Multiplier per further failure (at least 1). @default 2 */
  readonly backoffFactor: number;
  /** Ceiling of any delay. Milliseconds. @default 60000 */
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 3,
  initialDelayMs: 1000,
  backoffFactor: 2,
  maxDelayMs: 60_000,
});

/** Delay after failed attempt `n` (1-based): min(initial × factor^(n−1), max). Milliseconds. */
export function retryDelayMs(policy: RetryPolicy, n: number): number {
  return Math.min(policy.initialDelayMs * policy.backoffFactor ** Math.max(0, n - 1), policy.maxDelayMs);
}

/** Counters of one queue. */
export interface QueueStats {
  readonly tenant: string;
  readonly flow: string;
  /** Messages in the segment since the last drain. */
  readonly total: number;
  /** Messages the checkpoint has passed (acked, dead-lettered or moved to the retry schedule). */
  readonly processed: number;
  /** Messages not yet delivered for the first time. */
  readonly pending: number;
  readonly retriesScheduled: number;
  /** The scheduled retries, soonest first: message id, attempts consumed, due time (epoch milliseconds). */
  readonly retries: readonly { readonly id: number; readonly attempts: number; readonly dueMs: number }[];
  readonly deadLettersPending: number;
}

/** One delivery handed to the handler. */
export interface QueueMessage {
  readonly id: number;
  readonly correlationId: string;
  readonly enqueuedAt: string;
  /** This attempt's number, 1 for the first delivery. */
  readonly attempt: number;
  readonly payload: unknown;
  /** True when it comes from the retry schedule. */
  readonly isRetry: boolean;
  /** The submission's W3C trace context, as stored with the message (absent in older records). */
  readonly traceparent?: string | undefined;
  readonly tracestate?: string | undefined;
}

/**
 * What the handler decided (by error class, never by message text):
 * - `ack`: done (succeeded, filtered, fault handled, or dropped);
 * - `retry`: a failed attempt; rescheduled by `policy` (or after `delayMs`), dead-lettered once
 *   the attempt number reaches `policy.maxAttempts`;
 * - `retry-fixed`: try again after `delayMs` without consuming an attempt (never dead-letters);
 * - `dead`: dead-letter at once (e.g. an artifact failing its integrity check).
 */
export type Outcome =
  | { readonly kind: 'ack' }
  | { readonly kind: 'retry'; readonly error: string; readonly policy: RetryPolicy; readonly delayMs?: number }
  | { readonly kind: 'retry-fixed'; readonly delayMs: number; readonly error?: string }
  | { readonly kind: 'dead'; readonly error: string };

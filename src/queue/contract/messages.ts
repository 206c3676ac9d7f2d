import type { AuditEntryInput } from '../../store/contracts/audit.js';

/** The queue contract's messages: what is appended, what a worker is handed, what it decides, and the retry policy. */

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
  /**
   * The audit entry that stands for this message's acknowledgement, made from its id: committed in
   * the message's own transaction by a backend whose QueueStore.receipts is `with-message` (PostgreSQL).
   */
  readonly receipt?: (id: number) => AuditEntryInput;
  /**
   * Where the submission came from, written into the message's record by a backend whose
   * QueueStore.receipts is `outbox` (files): the record then holds all its receipt says, and the
   * queue's reader hands it back (QueuedReceipt) when this process may not have recorded it.
   */
  readonly receiptSource?: string;
}

/**
 * What `append` resolves with once the message is durable: its id, and where the backend wrote it,
 * in the backend's own terms (`storage` says which).
 */
export type AppendResult = SegmentAppendResult | RowAppendResult;

/** The file backend: the message is a record of its queue's segment file. */
export interface SegmentAppendResult {
  readonly storage: 'segment';
  readonly id: number;
  /**
   * Byte position of the record in the segment. It identifies the record internally and is not a
   * handle: a drain empties the segment and positions start again at 0.
   */
  readonly byteOffset: number;
}

/** PostgreSQL: the message is a row of `queue_messages`, placed by its queue and id alone (no byte position). */
export interface RowAppendResult {
  readonly storage: 'row';
  readonly id: number;
}

/**
 * The `offset` the spec puts in the 202 body of /enqueue (`{"queued":true,"offset":...}`), in the
 * `queue_enqueued` event and in the `queue.message.enqueued` audit entry: the record's byte offset
 * on files; on PostgreSQL, which has no byte positions, the message id (it grows with every append,
 * as an offset does). The name is the wire's, kept as the spec has it.
 */
export function wireOffset(r: AppendResult): number {
  return r.storage === 'segment' ? r.byteOffset : r.id;
}

/**
 * A message read from an outbox queue whose receipt the reading process did not record itself
 * (QueueConsumerOptions.onReceiptRead): what its `queue.message.enqueued` entry says.
 */
export interface QueuedReceipt {
  readonly id: number;
  readonly correlationId: string;
  /** The wire offset (wireOffset): the record's byte position where the reader found it. */
  readonly offset: number;
  /** AppendInput.receiptSource. */
  readonly source: string;
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
  | {
      readonly kind: 'retry';
      readonly error: string;
      readonly policy: RetryPolicy;
      readonly delayMs?: number;
      /** The step that failed, when the failure names one (reported, never stored with the message). */
      readonly step?: string | undefined;
    }
  | { readonly kind: 'retry-fixed'; readonly delayMs: number; readonly error?: string }
  | { readonly kind: 'dead'; readonly error: string; readonly step?: string | undefined };

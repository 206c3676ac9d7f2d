/** The queue contract's worker: the handler it runs, what it reports, the options every backend takes, and its handle. */
import type { Outcome, QueueMessage, QueuedReceipt, RetryPolicy } from './messages.js';
import type { QueueBacklog } from './names.js';
import type { QueueStats } from './stats.js';

export type QueueHandler = (msg: QueueMessage) => Promise<Outcome>;

/** Passed to `onAttemptFailed` (log `queue_failed`). */
export interface AttemptFailure {
  readonly message: QueueMessage;
  readonly error: string;
  /** Delay before the next attempt; undefined when dead-lettered. Milliseconds. */
  readonly retryInMs: number | undefined;
  readonly deadLettered: boolean;
  /** True for `retry-fixed` (no attempt consumed). */
  readonly fixed: boolean;
  /** The step that failed, when the handler's outcome named one. */
  readonly step?: string | undefined;
}

/** Passed to `onDeadLettered` (log `dlq_moved`: the only place the correlation id survives). */
export interface DeadLettering {
  readonly message: QueueMessage;
  readonly error: string;
  /** Attempts consumed. */
  readonly attempts: number;
  /** The step whose failure dead-lettered it, when the handler's outcome named one. */
  readonly step?: string | undefined;
}

/** What every backend's worker takes (a backend may take more: see the file backend's FileQueueConsumerOptions). */
export interface QueueConsumerOptions {
  readonly handler: QueueHandler;
  /** Idle poll interval. Milliseconds. @default 500 */
  readonly pollIntervalMs?: number;
  /** Policy applied when the handler throws instead of returning an outcome. @default 3 / 1000 / 2 / 60000 */
  readonly defaultPolicy?: RetryPolicy;
  /**
   * Acknowledgements written per batch while busy (and always when idle): on files, per
   * consumer-log write (the written checkpoint is synced at most every 100 ms; 16, one write per
   * turn of the event loop); on PostgreSQL, per DELETE of acknowledged rows (64, each a round trip).
   * A crash, or a takeover of a worker paused past its lease, redelivers at most this many, and the
   * message that was running. @default 16 on files, 64 on PostgreSQL
   */
  readonly checkpointEvery?: number;
  /** How long close() waits for the in-flight handler before abandoning it unacked. Milliseconds. @default 5000 */
  readonly closeGraceMs?: number;
  /**
   * Deliveries in a row before the loop lets the event loop take its I/O (requests, other
   * queues). A backlog then never holds up a turn for long. @default 16
   */
  readonly deliveriesPerTurn?: number;
  readonly onAttemptFailed?: (f: AttemptFailure) => void;
  readonly onDeadLettered?: (d: DeadLettering) => void;
  /**
   * Resolves once what the handler and the callbacks recorded elsewhere for the deliveries so far
   * (their audit entries) is durable; a rejection counts as resolved (the records stay queued
   * where they are). A delivery's progress is made durable only after it: on files a checkpoint is
   * written only past the deliveries of a barrier that resolved (asked in the background while
   * acknowledgements go on; retries, dead letters, compaction, idle and close wait for one); on
   * PostgreSQL acknowledged rows are deleted after one. So a crash never leaves a delivery passed
   * without its record: it is delivered again instead (at least once). @default none
   */
  readonly recordsDurable?: () => Promise<void>;
  /**
   * As recordsDurable, for a barrier that may take longer: the ones a file consumer asks in the
   * background while deliveries go on, and when it is caught up (its checkpoint then follows when
   * the barrier resolves). The audit writer answers it at its own pace instead of with a write of
   * its own (AuditAppender.committedSoon). @default recordsDurable
   */
  readonly recordsDurableSoon?: () => Promise<void>;
  /**
   * On an `outbox` store (QueueStore.receipts): a message about to be delivered whose receipt
   * another process was to record, called before its handler, so that the receipt is chained
   * before anything its delivery records (and, by recordsDurable, before its progress is). Such
   * a message may have been acknowledged by a process that died before recording it; the audit
   * store keeps the first of a message's receipts, so recording it again is safe.
   */
  readonly onReceiptRead?: (r: QueuedReceipt) => void;
  /** Storage errors of the loop itself (it backs off one poll interval and carries on). */
  readonly onError?: (err: unknown) => void;
  /**
   * The worker found nothing to deliver now and is about to wait (called at every such moment):
   * with the due time of its earliest scheduled retry, if any (epoch milliseconds).
   */
  readonly onIdle?: (nextRetryDueMs: number | undefined) => void;
  /**
   * The worker found its lock taken by another process or node (this one was paused or stalled
   * past the lease): it stopped before delivering anything more or recording any progress.
   */
  readonly onLockLost?: () => void;
}

/** `running` → `closing` (close() called; in-flight handler finishing) → `closed`. */
export type ConsumerStateName = 'running' | 'closing' | 'closed';

/** This process's worker of one queue. */
export interface QueueConsumerHandle {
  readonly state: ConsumerStateName;
  stats(): Promise<QueueStats>;
  /** Stops delivering; the handler in flight gets its grace period; progress is written. */
  close(): Promise<void>;
  /**
   * Stops delivering once the delivery in flight (if any) is settled, never abandoning it (a
   * worker giving its slot back to another queue); then as close(). A close() meanwhile still
   * applies its grace period. Resolves with what the queue still holds to deliver as seen once its
   * lock is released (QueueStore.backlogOf, answered from what the worker knows where it can);
   * rejects when its progress could not be written.
   */
  finish(): Promise<QueueBacklog | undefined>;
}

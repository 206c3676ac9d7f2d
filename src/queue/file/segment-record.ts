/** The file backend's record of one message in a queue's segment. */
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
  /**
   * The outbox (QueueStore.receipts): where the submission came from (`enqueue`, `queue_publish`),
   * so the record holds all its `queue.message.enqueued` entry says. Absent in records written
   * before it existed, and in those whose receipt is recorded otherwise (a dead letter replayed).
   */
  readonly src?: string;
  /** With `src`: the appending process (writer-token.ts), which recorded the receipt itself. */
  readonly w?: string;
}

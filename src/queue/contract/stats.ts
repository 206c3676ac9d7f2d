/** The queue contract's counters of one queue, as every backend reports them. */
/** Counters of one queue. */
export interface QueueStats {
  readonly tenant: string;
  readonly flow: string;
  /** Messages appended: on files, since the segment's last drain; on PostgreSQL, every id the queue has issued. */
  readonly total: number;
  /**
   * Messages whose delivery finished: acknowledged by the worker's handler (the flow completed, a
   * condition filtered it, or a fault handler succeeded), at the first delivery or at a retry; each
   * counts once, however many attempts failed before. Not those waiting in the retry schedule nor
   * those dead-lettered (`deadLettersPending` counts these). On files, since the segment's last
   * drain (queue counters drop to zero then); on PostgreSQL, since the queue's first message.
   */
  readonly processed: number;
  /** Messages not yet delivered for the first time. */
  readonly pending: number;
  readonly retriesScheduled: number;
  /** The scheduled retries, soonest first: message id, attempts consumed, due time (epoch milliseconds). */
  readonly retries: readonly { readonly id: number; readonly attempts: number; readonly dueMs: number }[];
  readonly deadLettersPending: number;
}

/** The queue contract's counters of one queue, as every backend reports them. */
/** Counters of one queue. */
export interface QueueStats {
  readonly tenant: string;
  readonly flow: string;
  /** Messages appended: on files, since the segment's last drain; on PostgreSQL, every id the queue has issued. */
  readonly total: number;
  /** Of `total`, those delivered at least once (acknowledged, dead-lettered or waiting in the retry schedule). */
  readonly processed: number;
  /** Messages not yet delivered for the first time. */
  readonly pending: number;
  readonly retriesScheduled: number;
  /** The scheduled retries, soonest first: message id, attempts consumed, due time (epoch milliseconds). */
  readonly retries: readonly { readonly id: number; readonly attempts: number; readonly dueMs: number }[];
  readonly deadLettersPending: number;
}

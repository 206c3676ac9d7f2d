/** The queue contract's compaction: what one pass did, and how each backend gives back the space of processed messages. */

/** What one compaction pass did to one queue (the file backend). */
export interface QueueCompaction {
  readonly tenant: string;
  readonly flow: string;
  /**
   * `busy`: another process's worker holds it (that process compacts it); `deferred`: this
   * process's worker is inside a handler and drains when it returns; `absent`: only the id
   * counter is left.
   */
  readonly result: 'drained' | 'trimmed' | 'deleted' | 'kept' | 'busy' | 'deferred' | 'absent';
}

/**
 * What one compaction pass did, backend by backend:
 * - `pass`: the file backend. Processed records stay in a queue's segment until a pass drains or
 *   trims it, or deletes an empty queue's files; `queues` says what it did to each.
 * - `database`: PostgreSQL. A message's row is deleted when it settles (acknowledged, or
 *   dead-lettered into its own row), and a dead letter's when it is replayed or discarded, so a
 *   pass finds nothing to retire; the database's own (auto)vacuum gives the space back. `queues`
 *   is empty.
 */
export type CompactionPass =
  | { readonly reclaimedBy: 'pass'; readonly queues: readonly QueueCompaction[] }
  | { readonly reclaimedBy: 'database'; readonly queues: readonly [] };

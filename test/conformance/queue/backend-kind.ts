/**
 * What the queue conformance suite is given: a way to open a fresh, empty queue store of one
 * kind. The suite (queue.conformance.ts) is a function of it, run once per backend (files.test.ts,
 * and the PostgreSQL one), so every implementation of QueueStore answers the same tests.
 */
import type { QueueStore } from '../../../src/queue/contract.js';

/** One opened backend, and how to let go of it (its store is removed once every handle on it is closed). */
export interface QueueBackendHandle {
  readonly backend: QueueStore;
  /** Closes the backend (its consumers first) and, with the last handle on the store, removes the store. */
  close(): Promise<void>;
}

export interface QueueBackendKind {
  readonly name: string;
  /** A new store with no queue in it. */
  open(): Promise<QueueBackendHandle>;
  /** Opens `n` backends on one new store: `n` processes or nodes sharing it. */
  openShared(n: number): Promise<QueueBackendHandle[]>;
  /**
   * Why this kind cannot show what one shared handle learns of another's worker through
   * `consumedElsewhere`, when it cannot (the tests that need it are then skipped with this reason).
   */
  readonly consumedElsewhereUntestable?: string;
}

/**
 * The delivery a queue worker has in flight, raced against close()'s grace period: every
 * backend's worker runs its handler and waits for it on close through this, so a handler that
 * outlives the grace is abandoned unacknowledged (and delivered again) the same way everywhere.
 */
import type { QueueHandler } from './contract/consumer.js';
import type { Outcome, QueueMessage, RetryPolicy } from './contract/messages.js';

export class InFlightHandler {
  readonly #handler: QueueHandler;
  readonly #defaultPolicy: RetryPolicy;
  #abandon: (() => void) | undefined;

  /** @param defaultPolicy the policy of a handler that throws instead of returning an outcome */
  constructor(handler: QueueHandler, defaultPolicy: RetryPolicy) {
    this.#handler = handler;
    this.#defaultPolicy = defaultPolicy;
  }

  /**
   * Runs the handler on `msg`. A throw is a failed attempt under the default policy; `abandoned`
   * when close() stopped waiting for it first (its outcome, whenever it comes, is dropped).
   */
  async run(msg: QueueMessage): Promise<Outcome | 'abandoned'> {
    const abandoned = new Promise<'abandoned'>((resolve) => (this.#abandon = () => resolve('abandoned')));
    const run = (async (): Promise<Outcome> => {
      try {
        return await this.#handler(msg);
      } catch (err) {
        return {
          kind: 'retry',
          error: err instanceof Error ? err.message : String(err),
          policy: this.#defaultPolicy,
        };
      }
    })();
    try {
      return await Promise.race([run, abandoned]);
    } finally {
      this.#abandon = undefined;
    }
  }

  /**
   * close()'s wait: resolves when the worker's `loop` ends, abandoning the handler in flight once
   * `graceMs` have passed so that the loop ends then. Rejects as the loop does.
   */
  async closeWithin(loop: Promise<void> | undefined, graceMs: number): Promise<void> {
    const grace = setTimeout(() => this.#abandon?.(), graceMs);
    try {
      await loop;
    } finally {
      clearTimeout(grace);
    }
  }
}

/**
 * A process's running workers, one per queue, as every queue backend keeps them: a worker closed
 * through its handle is forgotten, and one whose lock went to another process or node is forgotten
 * and closed before the caller hears of it.
 */
import type { QueueConsumerHandle, QueueConsumerOptions } from './contract.js';

export class ConsumerRegistry<C extends QueueConsumerHandle> {
  readonly #byQueue = new Map<string, C>();

  /** The running worker of `key` (`tenant/flow`), if any. */
  get(key: string): C | undefined {
    const c = this.#byQueue.get(key);
    if (c?.state !== 'closed') return c;
    this.#byQueue.delete(key);
    return undefined;
  }

  /**
   * Starts a worker through `start`, given the caller's options with `onLockLost` wrapped: another
   * process took the queue over (this one was paused past the lease), so the worker is forgotten
   * (the queue counts as consumed elsewhere), closed, and then the caller is told.
   * @returns undefined when `start` found the queue's lock held
   */
  async start<O extends QueueConsumerOptions>(
    key: string,
    opts: O,
    start: (opts: O) => Promise<C | undefined>,
  ): Promise<C | undefined> {
    const c = await start({
      ...opts,
      onLockLost: () => {
        if (this.#byQueue.get(key) === c) this.#byQueue.delete(key);
        void c?.close().catch(() => undefined);
        opts.onLockLost?.();
      },
    });
    if (c !== undefined) this.#byQueue.set(key, c);
    return c;
  }

  /** Stops and forgets the worker of `key`. */
  async stop(key: string): Promise<void> {
    const c = this.#byQueue.get(key);
    this.#byQueue.delete(key);
    await c?.close();
  }

  /** Closes every worker, each whatever the others do; forgets them all. */
  closeAll(): Promise<PromiseSettledResult<void>[]> {
    const all = [...this.#byQueue.values()];
    this.#byQueue.clear();
    return Promise.allSettled(all.map((c) => c.close()));
  }
}

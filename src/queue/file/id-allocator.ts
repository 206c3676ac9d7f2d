/**
 * The durable message-id counter of one queue. Ids are reserved in blocks under a short lock and
 * the counter file is replaced atomically before any id of the block is used, so ids are never
 * reissued (a crash only leaves a gap) and the lock and fsync cost is shared by a whole block.
 */
import { readFile } from 'node:fs/promises';
import { atomicWrite, isErrno } from './file-io.js';
import { LockFile, WRITE_LOCK_OPTIONS, type LockFileOptions } from '../coordination/lock-file.js';

/** Reads the next unreserved id (1 when the counter was never written). */
export async function readCounter(counterPath: string): Promise<number> {
  try {
    const parsed = JSON.parse(await readFile(counterPath, 'utf8')) as { next?: unknown };
    if (typeof parsed.next === 'number' && Number.isSafeInteger(parsed.next) && parsed.next >= 1) return parsed.next;
    throw new Error(`queue id counter ${counterPath} is unreadable`);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return 1;
    throw err;
  }
}

export class IdAllocator {
  #next = 0;
  #limit = 0;
  /** A block reserved ahead, used when the current one runs out. */
  #spare: { next: number; limit: number } | undefined;
  /** The reservation in flight, if any (it fills #spare). */
  #reserving: Promise<void> | undefined;

  /**
   * @param counterPath the queue's `counter.json`
   * @param lockPath the queue's `counter.lock`
   * @param blockSize ids reserved per counter write; 1 for one-shot writers such as the CLI
   * @param lockOptions the counter lock's (queue-paths.ts writeLockOptions)
   */
  constructor(
    readonly counterPath: string,
    readonly lockPath: string,
    readonly blockSize: number,
    readonly lockOptions: LockFileOptions = WRITE_LOCK_OPTIONS,
  ) {}

  /** Hands out `count` fresh ids, reserving new blocks as needed. */
  async take(count: number): Promise<number[]> {
    const ids: number[] = [];
    while (ids.length < count) {
      if (this.#next >= this.#limit) {
        if (this.#spare === undefined)
          await (this.#reserving ?? this.#startReserving(Math.max(this.blockSize, count - ids.length)));
        if (this.#spare === undefined) continue;
        ({ next: this.#next, limit: this.#limit } = this.#spare);
        this.#spare = undefined;
      }
      ids.push(this.#next++);
    }
    // Once half the block is used, the next one is reserved in the background: a group commit
    // never waits for the counter's lock, write, fsync and rename (several pool round trips).
    // A crash then leaves a gap of up to two blocks, never a reissued id.
    if (
      this.blockSize > 1 &&
      this.#spare === undefined &&
      this.#reserving === undefined &&
      this.#limit - this.#next < this.blockSize / 2
    ) {
      this.#startReserving(this.blockSize).catch(() => undefined); // a failure resurfaces on the next take that needs it
    }
    return ids;
  }

  #startReserving(size: number): Promise<void> {
    const p = this.#reserve(size).finally(() => {
      this.#reserving = undefined;
    });
    this.#reserving = p;
    return p;
  }

  async #reserve(size: number): Promise<void> {
    const lock = await LockFile.acquire(this.lockPath, this.lockOptions);
    try {
      const next = await readCounter(this.counterPath);
      // Fenced: a holder paused past the lease must not write back a counter another has
      // advanced since, or both would hand out the same ids.
      await atomicWrite(this.counterPath, `${JSON.stringify({ next: next + size })}\n`, () => lock.assertHeldSync());
      this.#spare = { next, limit: next + size };
    } finally {
      await lock.release();
    }
  }
}

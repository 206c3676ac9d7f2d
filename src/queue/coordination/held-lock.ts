/**
 * A lock another live process was found holding, remembered so that "is it still held?" is
 * answered on this thread by one stat and one kill(pid, 0), instead of tryAcquire's link attempt,
 * stat, owner read and liveness check through the libuv pool. A process appending to a queue whose
 * worker runs in a sibling (`--processes`, or another server on the state directory) asks this on
 * every submission: measured, tryAcquire's way cost that submission's main thread about 8 us and
 * five hand-overs to the pool (docs/performance.md, session 26).
 *
 * The judgement is tryAcquire's (lock-file.ts breakIfStale): held while the entry at the path is
 * the one seen, its mtime (the holder's heartbeat) is within the lease, and its owner's PID runs
 * when the owner is on this host. "The one seen" is its inode and its birth time together: an
 * entry made since, even one that got the same inode number, is a new holder, and the memo no
 * longer answers (the caller asks tryAcquire again). Where the file system keeps no birth time,
 * nothing is remembered.
 */
import { closeSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { ownerMayRun, parseLockOwner, type LockOwner } from './lock-file.js';

export class HeldLock {
  readonly path: string;
  readonly owner: LockOwner;
  readonly #leaseMs: number;
  readonly #ino: number;
  readonly #birthtimeMs: number;
  /** When the last look that found it held began (performance.now()); -Infinity after one that did not. */
  #heldAt = -Infinity;

  private constructor(path: string, owner: LockOwner, leaseMs: number, ino: number, birthtimeMs: number) {
    this.path = path;
    this.owner = owner;
    this.#leaseMs = leaseMs;
    this.#ino = ino;
    this.#birthtimeMs = birthtimeMs;
  }

  /**
   * The lock at `path` as it is now, when a live holder has it by the lease `leaseMs` (the lease
   * its takers judge it by); undefined when it is free, stale, unreadable, or its file system
   * keeps no birth time. The inode and the owner are read through one descriptor: they belong to
   * the same entry.
   */
  static observe(path: string, leaseMs: number): HeldLock | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return undefined;
    }
    try {
      const st = fstatSync(fd);
      if (!(st.birthtimeMs > 0)) return undefined;
      const owner = parseLockOwner(readFileSync(fd, 'utf8'));
      if (owner === undefined) return undefined;
      const held = new HeldLock(path, owner, leaseMs, st.ino, st.birthtimeMs);
      return held.stillHeld() ? held : undefined;
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }

  /** True while the entry is the one observed, within its lease, and its owner (on this host) runs. */
  stillHeld(): boolean {
    // Taken before the look: a look begun after an event saw the lock as it was after that event.
    const at = performance.now();
    let st;
    try {
      st = statSync(this.path, { throwIfNoEntry: false });
    } catch {
      st = undefined; // unreadable now: not known to be held
    }
    const held =
      st !== undefined &&
      st.ino === this.#ino &&
      st.birthtimeMs === this.#birthtimeMs &&
      Date.now() - st.mtimeMs <= this.#leaseMs &&
      ownerMayRun(this.owner);
    this.#heldAt = held ? at : -Infinity;
    return held;
  }

  /**
   * stillHeld(), or true without a look when a look begun after `since` (performance.now()) found
   * it held. A submission asks after its message is durable, with `since` the time its batch was:
   * the submissions of one batch are answered by one stat, each by a look made after its message
   * was written, so a holder letting go of the queue before that look is still seen doing so.
   */
  stillHeldSince(since: number): boolean {
    return this.#heldAt > since || this.stillHeld();
  }
}

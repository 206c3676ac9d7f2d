/**
 * Exclusive lock files shared by processes on one state directory (Node has no flock): created
 * with O_EXCL, owner recorded inside, kept fresh by a heartbeat on its mtime. A holder that died
 * (its PID is gone on this host) or stopped heartbeating past the lease (PID reuse, another host,
 * a frozen process) is broken by whoever next asks, so a crash never wedges the others.
 */
import { randomBytes } from 'node:crypto';
import { fstatSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rmdir, stat, unlink, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { StorageUnavailableError } from '../../common/errors.js';
import { isErrno } from '../../common/errno.js';

/** What a lock file holds (one JSON line). */
export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  /** Random per acquisition, so a re-created lock is never mistaken for the one judged stale. */
  readonly token: string;
  readonly acquiredAt: string;
}

export interface LockFileOptions {
  /**
   * A lock whose mtime is older than this is stale even if its PID looks alive (PID reuse,
   * another host, a frozen holder). Milliseconds. @default 30000
   */
  leaseMs?: number;
  /** How often the holder refreshes the mtime. Milliseconds. @default leaseMs / 3 */
  heartbeatMs?: number;
}

export interface AcquireOptions extends LockFileOptions {
  /** Give up waiting after this long and throw StorageUnavailableError. Milliseconds. @default 10000 */
  timeoutMs?: number;
}

/**
 * Options for the locks held around one write (a queue's append, id counter and dead-letter
 * locks). The lease bounds how long a holder that stopped (SIGSTOP, a frozen VM) holds up the
 * others' acknowledged writes: 3 s, then the next writer breaks it. Every holder checks the lock
 * is still its own just before it writes (`assertHeldSync`), so one resumed after losing it
 * writes nothing under it. Every user of one lock must judge it by the same lease.
 */
export const WRITE_LOCK_OPTIONS: Readonly<Required<LockFileOptions>> = Object.freeze({
  leaseMs: 3000,
  heartbeatMs: 500,
});

/** The lock was taken over (its holder paused past the lease); nothing was written under it. */
export class LockLostError extends StorageUnavailableError {
  constructor(path: string) {
    super(
      `lock ${path} was taken over while this process held it (paused past its lease); nothing was written, try again`,
    );
    this.name = 'LockLostError';
  }
}

/** This host's name, as lock files record it (read once: it is a system call). */
const HOST = hostname();

/** A break guard (`<lock>.break` directory) older than this belongs to a crashed breaker. */
const BREAK_GUARD_STALE_MS = 5000;

/** True when a process with this PID exists on this host (EPERM: exists, owned by someone else). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return isErrno(err, 'EPERM');
  }
}

/** Reads a lock file's owner; undefined when missing or not (yet) written. */
export async function readLockOwner(path: string): Promise<LockOwner | undefined> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as LockOwner;
    return typeof parsed.pid === 'number' && typeof parsed.token === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The owner of a lock file when it is a live process: one on another host counts as live (its pid
 * cannot be checked from here), one on this host only while its pid runs. Read only; nothing is taken.
 */
export async function liveLockOwner(path: string): Promise<LockOwner | undefined> {
  const owner = await readLockOwner(path);
  return owner !== undefined && (owner.host !== HOST || pidAlive(owner.pid)) ? owner : undefined;
}

/** An exclusive lock held by this process until `release()`. */
export class LockFile {
  readonly path: string;
  readonly owner: LockOwner;
  /** True when acquiring it meant breaking a stale lock (its holder may have left work torn). */
  readonly tookOver: boolean;
  /** The lock file, kept open for the heartbeat; undefined once released. */
  #fh: FileHandle | undefined;
  readonly #ino: number;
  #timer: NodeJS.Timeout | undefined;

  /** @internal Use LockFile.tryAcquire or LockFile.acquire. */
  constructor(path: string, owner: LockOwner, fh: FileHandle, ino: number, tookOver: boolean, heartbeatMs: number) {
    this.path = path;
    this.owner = owner;
    this.#fh = fh;
    this.#ino = ino;
    this.tookOver = tookOver;
    if (heartbeatMs > 0) {
      this.#timer = setInterval(() => {
        const now = new Date();
        this.#fh?.utimes(now, now).catch(() => undefined);
      }, heartbeatMs);
      this.#timer.unref();
    }
  }

  /** Takes the lock if it is free or stale; undefined when a live holder has it. */
  static async tryAcquire(path: string, opts: LockFileOptions = {}): Promise<LockFile | undefined> {
    const leaseMs = opts.leaseMs ?? 30_000;
    const heartbeatMs = opts.heartbeatMs ?? Math.max(1, Math.floor(leaseMs / 3));
    let tookOver = false;
    for (let round = 0; round < 3; round++) {
      const got = await create(path, heartbeatMs, tookOver);
      if (got) return got;
      const broke = await breakIfStale(path, leaseMs);
      if (broke === 'held') return undefined;
      if (broke === 'broken') tookOver = true;
    }
    return undefined;
  }

  /**
   * Waits (polling with backoff) until the lock is ours. Each poll touches `<lock>.want`, so a
   * holder that keeps the lock across operations (see `wanted`) knows to hand it back.
   */
  static async acquire(path: string, opts: AcquireOptions = {}): Promise<LockFile> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
    let waitMs = 1;
    for (;;) {
      const lock = await LockFile.tryAcquire(path, opts);
      if (lock) return lock;
      await announceWait(path);
      if (Date.now() >= deadline) {
        const owner = await readLockOwner(path);
        throw new StorageUnavailableError(
          `lock ${path} is held by ${owner ? `pid ${owner.pid} on ${owner.host}` : 'another process'}; try again later`,
        );
      }
      await new Promise((r) => setTimeout(r, waitMs));
      waitMs = Math.min(waitMs * 2, 4);
    }
  }

  /** True when some caller of `acquire` waited for the lock at `path` within the last `withinMs`. */
  static async wanted(path: string, withinMs: number): Promise<boolean> {
    try {
      return Date.now() - (await stat(wantPath(path))).mtimeMs <= withinMs;
    } catch {
      return false;
    }
  }

  /**
   * `stillHeld` on the calling thread: one `stat` of the path (microseconds from the page cache),
   * for checks that must not yield to the event loop between the check and what it guards.
   */
  stillHeldSync(): boolean {
    if (!this.#fh) return false;
    try {
      return statSync(this.path).ino === this.#ino;
    } catch {
      return false;
    }
  }

  /** Throws LockLostError unless `stillHeldSync()`: the fence just before a write under the lock. */
  assertHeldSync(): void {
    if (!this.stillHeldSync()) throw new LockLostError(this.path);
  }

  /** True while the file at `path` is still the one this process created. */
  async stillHeld(): Promise<boolean> {
    if (!this.#fh) return false;
    try {
      return (await stat(this.path)).ino === this.#ino;
    } catch {
      return false;
    }
  }

  /** Releases the lock (removing the file only if it is still ours). Safe to call twice. */
  async release(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    const fh = this.#fh;
    if (!fh) return;
    this.#fh = undefined;
    // The check and the removal on this thread: nothing runs between them (a worker of the pool
    // takes and gives back a queue's lock each time it gets and leaves a slot).
    try {
      if (statSync(this.path).ino === this.#ino) unlinkSync(this.path);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    } finally {
      await fh.close();
    }
  }
}

/** `<lock>.want`: its mtime is the last time anyone waited for the lock. */
function wantPath(path: string): string {
  return `${path}.want`;
}

async function announceWait(path: string): Promise<void> {
  const now = new Date();
  try {
    await utimes(wantPath(path), now, now);
  } catch (err) {
    // Missing: the first wait creates it. Any other failure only costs the waiter its turn sooner.
    if (isErrno(err, 'ENOENT')) await writeFile(wantPath(path), '').catch(() => undefined);
  }
}

/**
 * Creates the lock file with O_EXCL; undefined when it exists. The create itself goes to the
 * pool (measured: a file create cost 0.26 ms of the calling thread on this machine's disk, more
 * than the pool's round trip); writing the owner and reading the inode back are done here.
 */
async function create(path: string, heartbeatMs: number, tookOver: boolean): Promise<LockFile | undefined> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'wx');
  } catch (err) {
    if (isErrno(err, 'EEXIST')) return undefined;
    if (!isErrno(err, 'ENOENT')) throw err;
    await mkdir(dirname(path), { recursive: true });
    try {
      fh = await open(path, 'wx');
    } catch (err2) {
      if (isErrno(err2, 'EEXIST')) return undefined;
      throw err2;
    }
  }
  const owner: LockOwner = {
    pid: process.pid,
    host: HOST,
    token: randomBytes(8).toString('hex'),
    acquiredAt: new Date().toISOString(),
  };
  try {
    writeSync(fh.fd, `${JSON.stringify(owner)}\n`);
    const { ino } = fstatSync(fh.fd);
    return new LockFile(path, owner, fh, ino, tookOver, heartbeatMs);
  } catch (err) {
    await fh.close();
    await unlink(path).catch(() => undefined);
    throw err;
  }
}

/**
 * Removes the lock at `path` if its holder is gone: `held` (a live holder), `broken` (we removed
 * a stale lock) or `retry` (it vanished, or someone else is breaking it).
 */
async function breakIfStale(path: string, leaseMs: number): Promise<'held' | 'broken' | 'retry'> {
  let before;
  try {
    before = await stat(path);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return 'retry';
    throw err;
  }
  const owner = await readLockOwner(path);
  const dead = owner !== undefined && owner.host === HOST && !pidAlive(owner.pid);
  if (!dead && Date.now() - before.mtimeMs <= leaseMs) return 'held';
  // One breaker at a time: two processes judging the same lock stale must not both remove it
  // (the second would delete the lock the first has just created).
  const guard = `${path}.break`;
  try {
    await mkdir(guard);
  } catch (err) {
    if (!isErrno(err, 'EEXIST')) throw err;
    const g = await stat(guard).catch(() => undefined);
    if (g && Date.now() - g.mtimeMs > BREAK_GUARD_STALE_MS) await rmdir(guard).catch(() => undefined);
    return 'held';
  }
  try {
    const now = await stat(path).catch(() => undefined);
    if (now && now.ino === before.ino && now.mtimeMs === before.mtimeMs) {
      await unlink(path).catch(() => undefined);
      return 'broken';
    }
    return 'retry';
  } finally {
    await rmdir(guard).catch(() => undefined);
  }
}

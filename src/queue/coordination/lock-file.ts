/**
 * Exclusive lock files shared by processes on one state directory (Node has no flock): an entry
 * made only if absent, owner recorded inside, kept fresh by a heartbeat on its mtime. A holder that
 * died (its PID is gone on this host) or stopped heartbeating past the lease (PID reuse, another
 * host, a frozen process) is broken by whoever next asks, so a crash never wedges the others.
 *
 * With `ownersDir`, a lock is a hard link to this process's owner record there (owner-record.ts):
 * no inode is made per lock. Without it, or where links are refused, the lock is a file of its
 * own, created with O_EXCL.
 */
import { randomBytes } from 'node:crypto';
import { fstatSync, linkSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rmdir, stat, unlink, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { StorageUnavailableError } from '../../common/errors.js';
import { isErrno } from '../../common/errno.js';
import { OwnerRecord, type LockOwner } from './owner-record.js';

export type { LockOwner } from './owner-record.js';

export interface LockFileOptions {
  /**
   * A lock whose mtime is older than this is stale even if its PID looks alive (PID reuse,
   * another host, a frozen holder). Milliseconds. @default 30000
   */
  leaseMs?: number;
  /** How often the holder refreshes the mtime. Milliseconds. @default leaseMs / 3 */
  heartbeatMs?: number;
  /**
   * Where this process's owner record lives, on the lock's file system: the lock is taken as a
   * hard link to it (no inode made per lock). Every user of one lock passes the same directory.
   */
  ownersDir?: string;
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
export const WRITE_LOCK_OPTIONS: Readonly<Required<Omit<LockFileOptions, 'ownersDir'>>> = Object.freeze({
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

/** A lock file's text as its owner; undefined when it is not one (torn, or not yet written). */
export function parseLockOwner(text: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(text) as LockOwner;
    return typeof parsed?.pid === 'number' && typeof parsed.token === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Reads a lock file's owner; undefined when missing or not (yet) written. */
export async function readLockOwner(path: string): Promise<LockOwner | undefined> {
  try {
    return parseLockOwner(await readFile(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** True when a lock's owner may be running: one on another host counts as live (its pid cannot be checked from here), one on this host only while its pid runs. */
export function ownerMayRun(owner: LockOwner): boolean {
  return owner.host !== HOST || pidAlive(owner.pid);
}

/** The owner of a lock file when it is a live process (ownerMayRun). Read only; nothing is taken. */
export async function liveLockOwner(path: string): Promise<LockOwner | undefined> {
  const owner = await readLockOwner(path);
  return owner !== undefined && ownerMayRun(owner) ? owner : undefined;
}

/** How a lock is held: a file of its own (kept open for its heartbeat), or a link to the owner record. */
type Holding =
  | { readonly kind: 'file'; readonly fh: FileHandle; readonly timer?: NodeJS.Timeout }
  | { readonly kind: 'link'; readonly record: OwnerRecord };

/** An exclusive lock held by this process until `release()`. */
export class LockFile {
  readonly path: string;
  readonly owner: LockOwner;
  /** True when acquiring it meant breaking a stale lock (its holder may have left work torn). */
  readonly tookOver: boolean;
  /** Undefined once released. */
  #holding: Holding | undefined;
  readonly #ino: number;

  private constructor(path: string, owner: LockOwner, holding: Holding, ino: number, tookOver: boolean) {
    this.path = path;
    this.owner = owner;
    this.#holding = holding;
    this.#ino = ino;
    this.tookOver = tookOver;
    if (holding.kind === 'link') holding.record.holders.set(path, this);
  }

  /** @internal A lock file of its own, created with O_EXCL, with its heartbeat. */
  static ofFile(
    path: string,
    owner: LockOwner,
    fh: FileHandle,
    ino: number,
    tookOver: boolean,
    heartbeatMs: number,
  ): LockFile {
    let timer: NodeJS.Timeout | undefined;
    if (heartbeatMs > 0) {
      timer = setInterval(() => {
        const now = new Date();
        fh.utimes(now, now).catch(() => undefined);
      }, heartbeatMs);
      timer.unref();
    }
    return new LockFile(path, owner, { kind: 'file', fh, timer }, ino, tookOver);
  }

  /** @internal A link to this process's owner record (its heartbeat is the record's). */
  static ofLink(path: string, record: OwnerRecord, tookOver: boolean): LockFile {
    return new LockFile(path, record.owner, { kind: 'link', record }, record.ino, tookOver);
  }

  /** Takes the lock if it is free or stale; undefined when a live holder has it. */
  static async tryAcquire(path: string, opts: LockFileOptions = {}): Promise<LockFile | undefined> {
    const leaseMs = opts.leaseMs ?? 30_000;
    const heartbeatMs = opts.heartbeatMs ?? Math.max(1, Math.floor(leaseMs / 3));
    let tookOver = false;
    for (let round = 0; round < 3; round++) {
      const got =
        opts.ownersDir === undefined
          ? await create(path, heartbeatMs, tookOver)
          : await link(path, opts.ownersDir, heartbeatMs, tookOver);
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
    return wantSeen(await stat(wantPath(path)).catch(() => undefined), withinMs);
  }

  /** `wanted` on the calling thread: one stat from the page cache, no hand-over to the libuv pool. */
  static wantedSync(path: string, withinMs: number): boolean {
    let st;
    try {
      st = statSync(wantPath(path), { throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    return wantSeen(st, withinMs);
  }

  /**
   * `stillHeld` on the calling thread: one `stat` of the path (microseconds from the page cache),
   * for checks that must not yield to the event loop between the check and what it guards.
   */
  stillHeldSync(): boolean {
    if (!this.#holds()) return false;
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

  /** True while the entry at `path` is still the one this process made for this lock. */
  async stillHeld(): Promise<boolean> {
    if (!this.#holds()) return false;
    try {
      return (await stat(this.path)).ino === this.#ino;
    } catch {
      return false;
    }
  }

  /** Not released, and (linked) not lost and taken again by another LockFile of this process since. */
  #holds(): boolean {
    const h = this.#holding;
    return h !== undefined && (h.kind === 'file' || h.record.holders.get(this.path) === this);
  }

  /** Releases the lock (removing the entry only if it is still ours). Safe to call twice. */
  async release(): Promise<void> {
    const h = this.#holding;
    if (!h) return;
    const ours = this.#holds();
    this.#holding = undefined;
    if (h.kind === 'link' && ours) h.record.holders.delete(this.path);
    if (h.kind === 'file' && h.timer) clearInterval(h.timer);
    // The check and the removal on this thread: nothing runs between them (a worker of the pool
    // takes and gives back a queue's lock each time it gets and leaves a slot).
    try {
      if (ours && statSync(this.path).ino === this.#ino) unlinkSync(this.path);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    } finally {
      if (h.kind === 'file') await h.fh.close();
    }
  }
}

/** The one rule of `wanted`: the want file was touched within `withinMs` (none, or unreadable: not wanted). */
function wantSeen(st: { mtimeMs: number } | undefined, withinMs: number): boolean {
  return st !== undefined && Date.now() - st.mtimeMs <= withinMs;
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

/** Links in refusing to link here (another file system, no hard links, too many links): a file of its own. */
const NO_LINK = new Set(['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Takes the lock as a hard link to this process's owner record in `ownersDir`; undefined when the
 * entry exists. On this thread: a link and a futimes, microseconds (no inode is made).
 */
async function link(
  path: string,
  ownersDir: string,
  heartbeatMs: number,
  tookOver: boolean,
): Promise<LockFile | undefined> {
  let record = OwnerRecord.in(ownersDir, HOST, pidAlive);
  for (let attempt = 0; ; attempt++) {
    try {
      linkSync(record.path, path);
    } catch (err) {
      if (isErrno(err, 'EEXIST')) return undefined;
      if (NO_LINK.has((err as NodeJS.ErrnoException).code ?? '')) return create(path, heartbeatMs, tookOver);
      if (!isErrno(err, 'ENOENT') || attempt >= 2) throw err;
      // The lock's directory is not there yet, or the record is gone (its directory removed).
      await mkdir(dirname(path), { recursive: true });
      record = OwnerRecord.in(ownersDir, HOST, pidAlive, { recheck: true });
      continue;
    }
    // Fresh from now: a record untouched for a while must not make the new lock look stale.
    record.touch(heartbeatMs, path);
    return LockFile.ofLink(path, record, tookOver);
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
    return LockFile.ofFile(path, owner, fh, ino, tookOver, heartbeatMs);
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
  const dead = owner !== undefined && !ownerMayRun(owner);
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

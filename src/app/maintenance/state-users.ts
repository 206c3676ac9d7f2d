/**
 * Which processes use a state directory now. Each `svc serve` marks the directory with a lock file
 * of its own, `locks/serve-<pid>-<random>.lock`, kept fresh by its heartbeat while it runs and
 * removed when it stops; the scheduler's lock and each queue worker's consumer lock say the same of
 * older servers. Offline commands (`svc store migrate`) refuse a directory with a live user.
 */
import { readdir, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import type { StatePaths } from '../../common/paths.js';
import { listQueueDirs, LockFile, pidAlive, queuePaths, readLockOwner } from '../../queue/index.js';

/** A serve marker older than this, held on another host, is a server that stopped without removing it. Milliseconds. */
const MARKER_LEASE_MS = 30_000;

/** Marks the state directory as used by this `svc serve` until the returned lock is released. */
export async function markServing(paths: StatePaths): Promise<LockFile> {
  const path = join(paths.locksDir, `serve-${process.pid}-${randomBytes(4).toString('hex')}.lock`);
  const lock = await LockFile.tryAcquire(path, { leaseMs: MARKER_LEASE_MS });
  if (lock === undefined) throw new Error(`could not create the serve marker ${path}`);
  return lock;
}

/** A process holding one of the directory's lock files. */
export interface StateDirUser {
  /** The lock file, relative to the state directory. */
  readonly lock: string;
  readonly pid: number;
  readonly host: string;
}

/**
 * The live holders of the serve markers, the scheduler lock and the queues' consumer locks (this
 * process excluded). A holder on this host is live while its pid runs; one on another host while
 * its heartbeat is fresher than twice the lease (its pid cannot be checked from here).
 */
export async function stateDirUsers(paths: StatePaths): Promise<StateDirUser[]> {
  const files: string[] = [];
  try {
    for (const name of await readdir(paths.locksDir))
      if (name.endsWith('.lock')) files.push(join(paths.locksDir, name));
  } catch {
    // No locks directory: no server has run here since it was made.
  }
  for (const { tenant, flow } of await listQueueDirs(paths.queuesDir))
    files.push(queuePaths(paths.queuesDir, tenant, flow).consumerLock);
  const users: StateDirUser[] = [];
  for (const file of files.sort()) {
    const owner = await readLockOwner(file);
    if (owner === undefined || (owner.pid === process.pid && owner.host === hostname())) continue;
    const live = owner.host === hostname() ? pidAlive(owner.pid) : await freshWithin(file, 2 * MARKER_LEASE_MS);
    if (live) users.push({ lock: relative(paths.stateDir, file), pid: owner.pid, host: owner.host });
  }
  return users;
}

async function freshWithin(file: string, ms: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(file)).mtimeMs <= ms;
  } catch {
    return false;
  }
}

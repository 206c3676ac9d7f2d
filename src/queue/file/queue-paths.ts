/** Where one queue's files live: `queues/{tenant}/{flow}/`, names checked before the disk is touched. */
import { join } from 'node:path';
import { checkQueueNames } from '../contract.js';
import { WRITE_LOCK_OPTIONS, type LockFileOptions } from '../coordination/lock-file.js';

/** Under the queues directory: each process's owner record, which the queues' locks link to (owner-record.ts). */
const LOCK_OWNERS_DIR = '.lock-owners';

export interface QueuePaths {
  readonly tenant: string;
  readonly flow: string;
  readonly dir: string;
  /** Append-only message segment (framed records). */
  readonly segment: string;
  /** Where the segment's tail check may start (one framed record; see tail-hint.ts). */
  readonly tailHint: string;
  /** Consumer log: checkpoint and retry schedule (framed records). */
  readonly consumerLog: string;
  /** Dead-letter file (framed records). */
  readonly deadLetters: string;
  /** Next unreserved message id (JSON, replaced atomically). */
  readonly counter: string;
  /** Held by the one process consuming this queue. */
  readonly consumerLock: string;
  /** Held briefly around each batch write to the segment, and by a drain. */
  readonly appendLock: string;
  /** Held briefly while reserving a block of ids. */
  readonly counterLock: string;
  /** Held briefly around every dead-letter file change. */
  readonly deadLetterLock: string;
  /** Where the owner records live that this queue's locks are links to (shared by every queue; not a tenant name). */
  readonly lockOwners: string;
}

/** @throws SvcError SVC_ERR_INVALID_NAME when `tenant` or `flow` breaks the name rule (checked before any path is made). */
export function queuePaths(queuesDir: string, tenant: string, flow: string): QueuePaths {
  checkQueueNames(tenant, flow);
  const dir = join(queuesDir, tenant, flow);
  return Object.freeze({
    tenant,
    flow,
    dir,
    segment: join(dir, 'segment.log'),
    tailHint: join(dir, 'segment.hint'),
    consumerLog: join(dir, 'consumer.log'),
    deadLetters: join(dir, 'dlq.log'),
    counter: join(dir, 'counter.json'),
    consumerLock: join(dir, 'consumer.lock'),
    appendLock: join(dir, 'append.lock'),
    counterLock: join(dir, 'counter.lock'),
    deadLetterLock: join(dir, 'dlq.lock'),
    lockOwners: join(queuesDir, LOCK_OWNERS_DIR),
  });
}

/** Options of the locks held around one write to a queue's files (append, id counter, dead letters, drain). */
export function writeLockOptions(paths: QueuePaths): LockFileOptions {
  return { ...WRITE_LOCK_OPTIONS, ownersDir: paths.lockOwners };
}

/** Options of a queue's consumer lock (its worker's, or a compaction pass's while no worker runs). */
export function consumerLockOptions(paths: QueuePaths, leaseMs = 30_000): LockFileOptions & { leaseMs: number } {
  return { leaseMs, ownersDir: paths.lockOwners };
}

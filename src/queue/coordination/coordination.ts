/**
 * How the processes sharing one store take turns at the duties one of them performs at a time (the
 * cron scheduler, the cluster-wide housekeeping): lock files in a state directory's `locks/`, or
 * advisory locks on a cluster node's lease. The queue store gives its own (QueueStore.coordination),
 * so every caller takes these locks the same way on either backend.
 */
import { join } from 'node:path';
import type { Logger } from '../../common/logger.js';
import { startClusterDuty, type ClusterDuty } from './cluster-duty.js';
import type { LeaderLock } from './leader-lock.js';
import { LockFile } from './lock-file.js';
import type { NodeLease } from './node-lease.js';

/** The lease locks of the scheduler and the cluster-wide housekeeping (exported for what inspects a cluster's locks: tests). */
export const SCHEDULER_LOCK = 'scheduler';
export const HOUSEKEEPING_LOCK = 'housekeeping';

export interface Coordination {
  /**
   * Who takes turns: `state-directory`, the processes sharing one state directory on one host
   * (lock files with a lease and a heartbeat); `cluster`, the nodes sharing one PostgreSQL
   * database (session advisory locks on each node's lease, see NodeLease).
   */
  readonly scope: 'state-directory' | 'cluster';
  /**
   * Takes the scheduler's lock now: `locks/scheduler.lock` with a lease of `leaseMs`, or the
   * `scheduler` lock on the node lease (whose own lease applies). Undefined when another holds it.
   */
  takeSchedulerLock(leaseMs: number): Promise<LeaderLock | undefined>;
  /**
   * Starts asking for the housekeeping duty (cluster-duty.ts); `onTaken` is told each time this
   * node takes it. Undefined on a state directory, where there is no such duty: every process keeps
   * its own house (each queue's files are compacted under that queue's locks).
   */
  startHousekeepingDuty(log: Logger, onTaken: () => void): ClusterDuty | undefined;
}

/** The processes of one state directory: lock files in its `locks/` directory (statePaths().locksDir). */
export function stateDirectoryCoordination(locksDir: string): Coordination {
  return {
    scope: 'state-directory',
    takeSchedulerLock: (leaseMs) => LockFile.tryAcquire(join(locksDir, 'scheduler.lock'), { leaseMs }),
    startHousekeepingDuty: () => undefined,
  };
}

/** The nodes of a cluster: the locks of this node's lease. */
export function leaseCoordination(lease: NodeLease): Coordination {
  return {
    scope: 'cluster',
    takeSchedulerLock: () => lease.tryLeaderLock(SCHEDULER_LOCK),
    startHousekeepingDuty: (log, onTaken) => startClusterDuty(lease, HOUSEKEEPING_LOCK, log, onTaken),
  };
}

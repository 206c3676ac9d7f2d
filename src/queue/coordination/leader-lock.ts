/** A lock one process (or node) at a time leads with: the scheduler's. */

/**
 * LockFile (a lock file with a lease, on a state directory) and NodeLease.tryLeaderLock (a
 * PostgreSQL advisory lock, on a cluster) both give one; Coordination.takeSchedulerLock picks.
 */
export interface LeaderLock {
  /** True when the lock was taken from a holder that stopped without releasing it. */
  readonly tookOver: boolean;
  /** Looks again whether this holder still has it (a pause past the lease loses it). */
  stillHeld(): Promise<boolean>;
  /** The same look without waiting, for a check nothing may run between (a tick about to fire). */
  stillHeldSync(): boolean;
  release(): Promise<void>;
}

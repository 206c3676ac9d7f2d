/**
 * A duty one node of a cluster performs at a time (the housekeeping): held as a lock on the node
 * lease, asked for again every few seconds by every node that does not hold it, so the duty moves
 * to another node within the lease plus one retry after its holder dies.
 */
import type { Logger } from '../../common/logger.js';
import type { NodeLease } from './node-lease.js';

/** How often a node without the duty asks for it. Milliseconds. */
const RETRY_MS = 3000;

export interface ClusterDuty {
  /** True while this node holds the duty's lock (as far as it can tell without waiting). */
  leading(): boolean;
  stop(): Promise<void>;
}

/** @param onTaken told each time this node takes the duty (at start, or from a node that died) */
export function startClusterDuty(
  lease: NodeLease,
  name: string,
  log: Logger,
  onTaken: () => void = () => {},
): ClusterDuty {
  let held = false;
  let stopped = false;
  const ask = async () => {
    if (stopped) return;
    try {
      if (lease.holds(name)) return;
      if (held) log.warn(`cluster duty "${name}" lost (the lease session ended); asking for it again`);
      held = await lease.tryLock(name);
      if (held) {
        log.info(`cluster duty "${name}" taken by this node`);
        onTaken();
      }
    } catch {
      held = false; // the database is away: asked again at the next turn
    }
  };
  void ask();
  const timer = setInterval(() => void ask(), RETRY_MS);
  timer.unref();
  return {
    leading: () => lease.holds(name),
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await lease.unlock(name);
    },
  };
}

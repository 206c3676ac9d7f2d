/** Flow-state purge: deduplication rows past their own expires_at, finished correlation rows past retention. */
import type { FlowStateRepo } from '../store/flow-state-repo.js';

export interface PurgeResult {
  inboxDeleted: number;
  correlationsDeleted: number;
}

/** @param retentionHours `flow_state_retention_hours` (read once at startup) */
export function runFlowStatePurge(repo: FlowStateRepo, retentionHours: number, now: number = Date.now()): PurgeResult {
  return {
    inboxDeleted: repo.purgeInbox(new Date(now).toISOString()),
    correlationsDeleted: repo.purgeCorrelations(new Date(now - retentionHours * 3_600_000).toISOString()),
  };
}

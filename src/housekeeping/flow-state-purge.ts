/**
 * Flow-state purge: deduplication rows past their own expires_at, finished correlation rows past
 * retention; then the registry's free pages are given back to the file system in short slices.
 */
import type { FlowStateRepo } from '../store/flow-state-repo.js';
import { slicePacer } from '../common/slice-pacer.js';

export interface PurgeResult {
  inboxDeleted: number;
  correlationsDeleted: number;
  /** Pages of the registry database given back to the file system. */
  pagesFreed: number;
}

export interface PurgeOptions {
  /** @default Date.now() */
  now?: number;
  /** Asked between vacuum slices; true stops there (shutdown). */
  stopping?: () => boolean;
}

/** @param retentionHours `flow_state_retention_hours` (read once at startup) */
export async function runFlowStatePurge(repo: FlowStateRepo, retentionHours: number, opts: PurgeOptions = {}): Promise<PurgeResult> {
  const now = opts.now ?? Date.now();
  const inboxDeleted = repo.purgeInbox(new Date(now).toISOString());
  const correlationsDeleted = repo.purgeCorrelations(new Date(now - retentionHours * 3_600_000).toISOString());
  const stopping = () => opts.stopping?.() === true;
  const vacuum = stopping() ? undefined : await repo.reclaimFreePages({ between: slicePacer(stopping).between });
  return { inboxDeleted, correlationsDeleted, pagesFreed: vacuum?.pagesFreed ?? 0 };
}

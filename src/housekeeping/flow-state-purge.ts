/**
 * Flow-state purge: deduplication rows past their own expires_at, finished correlation rows past
 * retention; then, on the embedded SQLite store, the registry's free pages are given back to the
 * file system in short slices.
 */
import type { FlowStateStore } from '../store/contracts/index.js';
import type { ReclaimOptions, ReclaimResult } from '../store/sqlite/auto-vacuum.js';
import { slicePacer } from '../common/slice-pacer.js';

export interface PurgeResult {
  inboxDeleted: number;
  correlationsDeleted: number;
  /** Pages of the registry database given back to the file system (0 without `reclaim`). */
  pagesFreed: number;
}

/** Gives a store's free pages back to the file system in slices (FlowStateStore.reclaimFreePages). */
export type ReclaimFn = (opts: ReclaimOptions) => Promise<ReclaimResult>;

export interface PurgeOptions {
  /** @default Date.now() */
  now?: number;
  /** Asked between vacuum slices; true stops there (shutdown). */
  stopping?: () => boolean;
  /**
   * The vacuum step after the deletes (serve passes FlowStateStore.reclaimFreePages, which gives
   * nothing back on PostgreSQL: its autovacuum reclaims its own space). @default none
   */
  reclaim?: ReclaimFn | undefined;
}

/** @param retentionHours `flow_state_retention_hours` (read once at startup) */
export async function runFlowStatePurge(
  store: FlowStateStore,
  retentionHours: number,
  opts: PurgeOptions = {},
): Promise<PurgeResult> {
  const now = opts.now ?? Date.now();
  const inboxDeleted = await store.purgeInbox(new Date(now).toISOString());
  const correlationsDeleted = await store.purgeCorrelations(new Date(now - retentionHours * 3_600_000).toISOString());
  const stopping = () => opts.stopping?.() === true;
  const vacuum =
    opts.reclaim === undefined || stopping()
      ? undefined
      : await opts.reclaim({ between: slicePacer(stopping).between });
  return { inboxDeleted, correlationsDeleted, pagesFreed: vacuum?.pagesFreed ?? 0 };
}

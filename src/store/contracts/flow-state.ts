/** The flow state contract (deduplication and correlation rows) and the helpers both backends share. */
import type { Awaitable } from '../../common/awaitable.js';
import { StorageUnavailableError } from '../../common/errors.js';

export type InboxStatus = 'in_flight' | 'done' | 'failed';
export type CorrelationStatus = 'open' | 'timed_out' | 'closed' | 'closed_late';

export interface InboxRow {
  tenant: string;
  flow: string;
  key_hash: string;
  status: InboxStatus;
  claimed_at: string;
  /** ISO 8601 UTC, fixed at claim time from the window. */
  expires_at: string;
  /** In-flight lease end; null once released by `svc state release`. */
  lease_expires_at: string | null;
  first_correlation_id: string;
  response_status: number | null;
  /** JSON object of the replayed headers. */
  response_headers: string | null;
  /** JSON-encoded output (dedup_memoize_response only). */
  response_body: string | null;
  finished_at: string | null;
}

export interface CorrelationRow {
  tenant: string;
  flow: string;
  key_hash: string;
  step: string;
  status: CorrelationStatus;
  opened_at: string;
  deadline: string;
  on_timeout_flow: string | null;
  correlation_id: string;
  /** JSON of correlation_state; never shown by any command. */
  state: string | null;
  closed_at: string | null;
}

export interface ClaimRequest {
  tenant: string;
  flow: string;
  keyHash: string;
  correlationId: string;
  now: string;
  expiresAt: string;
  leaseExpiresAt: string;
  /** A `failed` row is claimed again (dedup_on_failure other than absorb). */
  reclaimFailed: boolean;
}

/** `claimed`: the caller runs the flow; otherwise the existing row decides the answer. */
export type ClaimOutcome = { claimed: true } | { claimed: false; row: InboxRow };

export interface StateFilter {
  tenant?: string;
  flow?: string;
  statuses?: readonly string[];
  /** @default 50 */
  limit?: number;
}

/**
 * The storage contract: implemented by store/sqlite/ and store/pg/. Every failure of
 * the store is StorageUnavailableError. Instants are ISO 8601 UTC text and compare as text.
 */
export interface FlowStateStore {
  /**
   * Claims a key atomically: exactly one caller gets `{ claimed: true }` for a (tenant, flow, key)
   * while its row is in force. A new key, an expired window, an expired or released lease, or
   * (with `reclaimFailed`) a failed row is claimed again, as a fresh in_flight row.
   */
  claim(c: ClaimRequest): Awaitable<ClaimOutcome>;
  /** Records the outcome of the claimed run, only while the row is still this claim's and in_flight. */
  finish(tenant: string, flow: string, keyHash: string, correlationId: string, o: FinishRequest): Awaitable<void>;
  getInbox(tenant: string, flow: string, keyHash: string): Awaitable<InboxRow | undefined>;
  /** Clears the lease of an in_flight row so the next delivery may run; returns the row as it was, or undefined. */
  release(tenant: string, flow: string, keyHash: string): Awaitable<InboxRow | undefined>;
  /** Newest claim first. */
  listInbox(f: StateFilter): Awaitable<InboxRow[]>;
  /** Deletes rows past their own `expires_at` (an in_flight row only once its lease is gone too); returns how many. */
  purgeInbox(now: string): Awaitable<number>;
  /** Inserts an open row unless any row exists for the key; then returns that row instead (undefined: opened). */
  openCorrelation(r: Omit<CorrelationRow, 'status' | 'closed_at'>): Awaitable<CorrelationRow | undefined>;
  /** Deletes the open row this delivery opened (its flow failed, so the correlation never started). */
  withdrawCorrelation(tenant: string, flow: string, keyHash: string, correlationId: string): Awaitable<void>;
  getCorrelation(tenant: string, flow: string, keyHash: string): Awaitable<CorrelationRow | undefined>;
  /**
   * open -> closed, timed_out -> closed_late (the status decides, not the clock: an open row past
   * its deadline that no reconcile pass has timed out yet closes as `closed`); returns the status
   * before, or undefined when no row exists.
   */
  closeCorrelation(
    tenant: string,
    flow: string,
    keyHash: string,
    now: string,
  ): Awaitable<CorrelationStatus | undefined>;
  /** Open rows whose deadline has passed, oldest deadline first. @default limit 500 */
  dueCorrelations(now: string, limit?: number): Awaitable<CorrelationRow[]>;
  /** open -> timed_out; false when another process (or a close) got there first. */
  markTimedOut(tenant: string, flow: string, keyHash: string): Awaitable<boolean>;
  /** Deletes finished rows (not open) whose deadline is before `cutoff`; returns how many. */
  purgeCorrelations(cutoff: string): Awaitable<number>;
  /** Newest opening first. */
  listCorrelations(f: StateFilter): Awaitable<CorrelationRow[]>;
  /**
   * Gives the space the purges freed back to the file system, in slices paced by `opts.between`
   * (housekeeping's step after the purges). PostgreSQL's autovacuum reclaims its own space: there
   * it gives nothing back and says so (0 pages).
   */
  reclaimFreePages(opts: ReclaimOptions): Promise<ReclaimResult>;
}

/** How housekeeping paces a reclaim of free pages. */
export interface ReclaimOptions {
  /** Awaited after each slice; false stops (shutdown). Give the event loop a turn in it. */
  between: () => Promise<boolean>;
  /** @default VACUUM_PAGES_PER_SLICE (store/sqlite/auto-vacuum.ts) */
  pagesPerSlice?: number;
}

/** What a reclaim of free pages gave back. */
export interface ReclaimResult {
  /** Pages taken off the free list (and cut from the end of the file). */
  pagesFreed: number;
  slices: number;
  /** Longest single `incremental_vacuum` statement, in ms. */
  longestSliceMs: number;
  /** True when `between` stopped it with free pages left. */
  stopped: boolean;
}

/** The outcome `finish` records. */
export interface FinishRequest {
  status: 'done' | 'failed';
  responseStatus: number;
  headers: Record<string, string>;
  body: string | null;
  now: string;
}

/** What every failure of a flow state store becomes: the spec's "state unavailable" (503). */
export function stateUnavailable(err: unknown): StorageUnavailableError {
  if (err instanceof StorageUnavailableError) return err;
  return new StorageUnavailableError('state unavailable: the flow state store could not be read or written', err);
}

/**
 * The WHERE clause, its arguments and the row limit of a listing, `param(n)` writing the n-th
 * placeholder (from 1); undefined when no status is selected, so nothing matches.
 */
export function stateFilterSql(
  f: StateFilter,
  param: (n: number) => string,
): { where: string; args: unknown[]; limit: number } | undefined {
  const where: string[] = [];
  const args: unknown[] = [];
  const next = (v: unknown): string => {
    args.push(v);
    return param(args.length);
  };
  if (f.tenant !== undefined) where.push(`tenant = ${next(f.tenant)}`);
  if (f.flow !== undefined) where.push(`flow = ${next(f.flow)}`);
  if (f.statuses !== undefined) {
    if (f.statuses.length === 0) return undefined;
    where.push(`status IN (${f.statuses.map(next).join(', ')})`);
  }
  return {
    where: where.length ? `WHERE ${where.join(' AND ')}` : '',
    args,
    limit: Math.max(1, Math.floor(f.limit ?? 50)),
  };
}

/** Whether a claim at `now` takes the key over from `row` (ClaimRequest, FlowStateStore.claim). */
export function claimable(row: InboxRow, now: string, reclaimFailed: boolean): boolean {
  if (row.expires_at <= now) return true;
  if (row.status === 'in_flight') return row.lease_expires_at === null || row.lease_expires_at <= now;
  return row.status === 'failed' && reclaimFailed;
}

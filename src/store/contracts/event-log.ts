/** The event log's read contract: queries, stored events and the helpers both backends share. */
import type { Awaitable } from '../../common/awaitable.js';
import type {
  EdgeRead,
  FlowTotal,
  QueueSample,
  QueueSampleQuery,
  RollupCount,
  RollupPoint,
  RollupQuery,
} from './rollups.js';

/** The event kinds the spec names. Others may be added; each is listed in docs/events.md. */
export const EVENT_KINDS = [
  'received',
  'completed',
  'access_denied',
  'queue_enqueued',
  'queue_processed',
  'queue_filtered',
  'queue_failed',
  'dlq_moved',
  'connector_received',
  'connector_oversized',
  'cert_expiring',
  'cert_expired',
  'step_traced',
  'egress_traced',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

/** Trace rows keep their payload whole (masked) whatever the flow's log_level. */
export const TRACE_EVENTS: ReadonlySet<string> = new Set(['step_traced', 'egress_traced']);

/** A stored row: payload as JSON text. */
export interface EventRow {
  ts: string;
  correlation_id: string | null;
  tenant: string | null;
  flow: string | null;
  step: string | null;
  event: string;
  payload: string | null;
  payload_truncated: 0 | 1;
  http_status: number | null;
  outcome: string | null;
  reason: string | null;
  /**
   * W3C trace id; null for rows outside a delivery (and rows written before the column existed).
   * Optional for writers of ready-made rows (absent means null); a row read back always has it.
   */
  trace_id?: string | null;
  /**
   * A delivery's terminal row (TERMINAL_EVENTS): milliseconds from its entry to its end; for a queued
   * delivery from the message's enqueue time, so the wait in the queue counts. Null elsewhere and on
   * rows written before the column existed. Beyond the spec's row (docs/events.md); optional as trace_id.
   */
  duration_ms?: number | null;
  /**
   * The step that failed, on the terminal row of a failed or fault-handled delivery and on a
   * `queue_failed` row (a boundary row's `step` stays empty, as the spec says). Optional as trace_id.
   */
  failed_step?: string | null;
}

/**
 * The kinds of row that end a delivery: one per delivery, carrying its duration and failing step.
 * `completed` ends a synchronous one (/run, SOAP, gRPC, cron), the others a queued one.
 */
export const TERMINAL_EVENTS: readonly EventKind[] = ['completed', 'queue_processed', 'queue_filtered', 'dlq_moved'];

export interface EventQuery {
  tenant?: string;
  flow?: string;
  event?: string;
  /** Only rows of one of these kinds (the Deliveries view asks for TERMINAL_EVENTS); an empty list matches none. */
  events?: readonly string[];
  correlation_id?: string;
  http_status?: number;
  /** Only rows with an `http_status` of at least this (rows without one never match). */
  http_status_min?: number;
  /** Only rows with an `http_status` of at most this (rows without one never match). */
  http_status_max?: number;
  /** Paging: only rows with a smaller id (the last id of the previous page). */
  beforeId?: number;
  /** Following: only rows with a larger id (the last id already seen). */
  afterId?: number;
  /** Return the oldest rows first (following the log) instead of the newest. @default false */
  oldestFirst?: boolean;
  /** ISO 8601 UTC bounds on `ts`, found by a binary search over row ids (rows are appended in time order; no index). */
  since?: string;
  /** Inclusive: an instant or a prefix of one (`2026-01-31T08:00` takes in the whole minute). */
  until?: string;
  /** Most rows returned, newest first. @default 100 */
  limit?: number;
}

/** Which trace rows to read (`step_traced`, `egress_traced`). */
export interface TraceQuery {
  tenant?: string;
  flow?: string;
  correlation_id?: string;
  /** ISO 8601 UTC, inclusive bounds on `ts`. */
  since?: string;
  until?: string;
  /** Paging: only rows with a larger id (the last id of the previous page). */
  afterId?: number;
  /** Most rows returned, oldest first; at most 10,000 (page with afterId for more). @default 1000 */
  limit?: number;
}

/** A stored event as read back: payload parsed from its JSON text. */
export interface StoredEvent extends Omit<EventRow, 'payload' | 'payload_truncated'> {
  id: number;
  payload: unknown;
  payload_truncated: boolean;
}

/** What `countsSince` answers: rows per kind, and `completed` rows with a status of 400 or more. */
export interface EventCounts {
  byEvent: Record<string, number>;
  failedCompletions: number;
}

/**
 * The read side of the structured event log, on SQLite (`SqliteEventLogStore`, log.db) or PostgreSQL
 * (store/pg/pg-event-log-store.ts). Rows are written by EventLog, never through this contract.
 * Ids grow in the order rows became visible: following after the last id seen misses nothing.
 */
export interface EventLogStore {
  /** Newest first (or oldest first). Filters are exact matches. Trace rows are never returned here: only `queryTrace` reads them. */
  query(q?: EventQuery): Awaitable<StoredEvent[]>;
  /** Trace rows, oldest first; none at all when `readable` is false (the caller's role may not read them). */
  queryTrace(q: TraceQuery, readable: boolean): Awaitable<StoredEvent[]>;
  /** How many rows of each kind were written at or after `iso` (the Overview's "last hour"). */
  countsSince(iso: string): Awaitable<EventCounts>;
  /** The id of the newest row (0 when there is none): where a reader that follows the log starts. */
  lastId(): Awaitable<number>;
  /** The first row id whose `ts` is not before `iso`, found by a binary search over ids (one past the last id when none is; 0 when there are no rows). */
  firstIdAtOrAfter(iso: string): Awaitable<number>;
  /** The per-minute rollups of a range, summed as `q` asks (contracts/rollups.ts); never a scan of the rows. */
  rollups(q: RollupQuery): Awaitable<RollupPoint[]>;
  /**
   * `rollups(q)` with the counts alone (count and failures, no time or histogram): the same points,
   * read on delivery rows from a covering index, never the table (the busiest flows of the hour,
   * the queue charts: 1,000 flows' hour is 60,000 rows).
   */
  rollupCounts(q: RollupQuery): Awaitable<RollupCount[]>;
  /**
   * Each flow's deliveries (every door) and failures over `[fromMinute, toMinute)`, by tenant and
   * flow: exactly the delivery rollups of those minutes summed, read from 10-minute blocks
   * (rollup_blocks) with the partial blocks at the edges corrected by their minutes
   * (contracts/rollups.ts, flowTotalsPlan). Flows with nothing in the window are absent. `edges`
   * overrides how the partial blocks are read (measurements and tests).
   */
  flowTotals(fromMinute: number, toMinute: number, edges?: { lead: EdgeRead; trail: EdgeRead }): Awaitable<FlowTotal[]>;
  /** Each queue's figures sampled once a minute over a range, by tenant, flow and minute. */
  queueSamples(q: QueueSampleQuery): Awaitable<QueueSample[]>;
}

/** The trace event kinds as an SQL list (constants, never caller input). */
export const TRACE_KINDS_SQL = [...TRACE_EVENTS].map((e) => `'${e}'`).join(', ');

/** A row as read (`payload_truncated` 0 or 1) as the contract answers it: payload parsed, flag a boolean. */
export function toStoredEvent(r: EventRow & { id: number }): StoredEvent {
  return {
    ...r,
    payload: r.payload === null ? null : JSON.parse(r.payload),
    payload_truncated: r.payload_truncated === 1,
  };
}

/** `countsSince`'s answer from its rows: one per kind with its count and its failed completions. */
export function toEventCounts(rows: readonly { event: string; n: number; failed: number }[]): EventCounts {
  const byEvent: Record<string, number> = {};
  let failedCompletions = 0;
  for (const r of rows) {
    byEvent[r.event] = r.n;
    failedCompletions += r.failed;
  }
  return { byEvent, failedCompletions };
}

/**
 * Adds `column = ?` for each of `keys` that the query sets (column names are these constants, never
 * input). `param` names the placeholder of the n-th argument (PostgreSQL's `$n`).
 */
export function exactMatches<Q extends object>(
  q: Q,
  keys: readonly (keyof Q & string)[],
  where: string[],
  args: unknown[],
  param: (n: number) => string = () => '?',
): void {
  for (const key of keys) {
    const v = q[key];
    if (v !== undefined) {
      args.push(v);
      where.push(`${key} = ${param(args.length)}`);
    }
  }
}

/**
 * Adds `event IN (...)` when the query names a list of kinds (`events`); `param` as in `exactMatches`.
 * One placeholder per kind, so the statement stays a plain filter over the id range or the
 * (tenant, flow, ts) index.
 */
export function kindList(
  q: EventQuery,
  where: string[],
  args: unknown[],
  param: (n: number) => string = () => '?',
): void {
  if (q.events === undefined) return;
  if (q.events.length === 0) {
    where.push('1 = 0');
    return;
  }
  const params = q.events.map((e) => {
    args.push(e);
    return param(args.length);
  });
  where.push(`event IN (${params.join(', ')})`);
}

/**
 * Adds the `http_status` range bounds the query sets (`http_status >= ?`, `http_status <= ?`);
 * `param` as in `exactMatches`.
 */
export function statusRange(
  q: EventQuery,
  where: string[],
  args: unknown[],
  param: (n: number) => string = () => '?',
): void {
  if (q.http_status_min !== undefined) {
    args.push(q.http_status_min);
    where.push(`http_status >= ${param(args.length)}`);
  }
  if (q.http_status_max !== undefined) {
    args.push(q.http_status_max);
    where.push(`http_status <= ${param(args.length)}`);
  }
}

/** Values per row in a packed batch, in `EventRow` field order. */
export const ROW_WIDTH = 14;

/**
 * A batch of rows as one flat array of primitives (`ROW_WIDTH` per row). The writer keeps no
 * object per event while a batch fills, and the array crosses to the writer thread cheaply.
 */
export type RowColumns = (string | number | null)[];

/** A stored row as a packed batch of one. */
export function packRow(r: EventRow): RowColumns {
  return [
    r.ts,
    r.correlation_id,
    r.tenant,
    r.flow,
    r.step,
    r.event,
    r.payload,
    r.payload_truncated,
    r.http_status,
    r.outcome,
    r.reason,
    r.trace_id ?? null,
    r.duration_ms ?? null,
    r.failed_step ?? null,
  ];
}

/**
 * Per-minute rollups of what the service did: for each tenant, flow and minute, the deliveries by
 * door and the runs of each step, with their failures and a latency histogram. Counted in memory
 * on the request path (app/runtime/rollup-recorder.ts), added to the log's store off it by the
 * event log's writer, kept by the log's retention, and read by the charts and the flow diagram's
 * live numbers, which never scan the event log.
 */

/** Upper bounds (ms) of the latency histogram's buckets; a last bucket holds everything slower. */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
];
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/**
 * A delivery row has a door and no step; a step row has a step and no door (`''`). A delivery row
 * with tenant and flow `''` counts every flow (the all-flows row).
 */
export interface RollupKey {
  /** Whole minutes since the epoch (UTC). */
  readonly minute: number;
  readonly tenant: string;
  readonly flow: string;
  /** `http`, `soap`, `grpc`, `cron`, `queue` for a delivery row; `''` for a step row. */
  readonly door: string;
  /** The step's name for a step row; `''` for a delivery row. */
  readonly step: string;
}

/** What a key counted: added to what the store holds for the same key. */
export interface RollupRow extends RollupKey {
  count: number;
  failures: number;
  sumMs: number;
  /** LATENCY_BUCKETS counts, not cumulative. */
  buckets: number[];
}

export interface RollupQuery {
  tenant?: string;
  flow?: string;
  /** Inclusive, whole minutes since the epoch. */
  fromMinute: number;
  /** Exclusive. */
  toMinute: number;
  /** `delivery` rows (per door) or `step` rows. */
  level: 'delivery' | 'step';
  /** Delivery rows of this door only. */
  door?: string;
  /** Sum into one point per `minute`, per `hour` (its first minute), or one for the whole `window` (minute: fromMinute). */
  per: 'minute' | 'hour' | 'window';
  /**
   * Keep each flow apart (tenant and flow set on every point); otherwise summed over the flows (both
   * `''`). For delivery rows without a tenant or flow either, the all-flows rows (tenant and flow
   * `''`, written beside each flow's) are read instead of summing every flow's. @default false
   */
  byFlow?: boolean;
}

/** A point of a series: the rows of one period (and door or step, and flow when asked) summed. */
export type RollupPoint = RollupRow;

/**
 * A point with its counts alone (no time, no histogram): what `rollupCounts` answers, for the
 * readers that need no latency (the busiest flows, the queue charts).
 */
export interface RollupCount extends RollupKey {
  count: number;
  failures: number;
}

/** Rows are added per key: what the writers upsert (ON CONFLICT adds each column). */
export const ROLLUP_COLUMNS: readonly string[] = [
  'minute',
  'tenant',
  'flow',
  'door',
  'step',
  'count',
  'failures',
  'sum_ms',
];

/** The bucket a latency falls in. */
export function latencyBucket(ms: number): number {
  let i = 0;
  while (i < LATENCY_BOUNDS_MS.length && ms > LATENCY_BOUNDS_MS[i]!) i++;
  return i;
}

/**
 * The `q` quantile (0..1) of a histogram, interpolated inside its bucket (the last bucket answers
 * its lower bound: it has no upper one); null when it holds nothing.
 */
export function latencyQuantile(buckets: readonly number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i]!;
    if (n === 0 || seen + n < rank) {
      seen += n;
      continue;
    }
    const low = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
    const high = LATENCY_BOUNDS_MS[i];
    if (high === undefined) return low;
    return low + ((high - low) * Math.max(0, rank - seen)) / n;
  }
  return LATENCY_BOUNDS_MS.at(-1)!;
}

/** The histogram's columns, in order (`b0` .. `b14`): constants, never input. */
export const BUCKET_COLUMNS: readonly string[] = Array.from({ length: LATENCY_BUCKETS }, (_, i) => `b${i}`);

/** Every column of a row in insert order, and the ones added on conflict. */
export const ROLLUP_INSERT_COLUMNS: readonly string[] = [...ROLLUP_COLUMNS, ...BUCKET_COLUMNS];
export const ROLLUP_ADDED_COLUMNS: readonly string[] = ['count', 'failures', 'sum_ms', ...BUCKET_COLUMNS];

/** A row's values in ROLLUP_INSERT_COLUMNS order. */
export function rollupValues(r: RollupRow): unknown[] {
  return [r.minute, r.tenant, r.flow, r.door, r.step, r.count, r.failures, r.sumMs, ...r.buckets];
}

/** The columns `rollupCounts` sums: on delivery rows, those the covering index (rollups_delivery) holds. */
export const ROLLUP_COUNT_COLUMNS: readonly string[] = ['count', 'failures'];

/**
 * The one SELECT both stores run for `rollups(q)`: the rows of the range and level, summed per
 * period (and flow when asked), door and step, in that order. `param(n)` names the n-th
 * placeholder (`?` on SQLite, `$n` on PostgreSQL). Column names and expressions are constants.
 * `sum` names the columns summed: every counted one by default; ROLLUP_COUNT_COLUMNS for
 * `rollupCounts`, which on delivery rows the covering index answers without reading the table.
 */
export function rollupSelect(
  q: RollupQuery,
  param: (n: number) => string,
  sum: readonly string[] = ROLLUP_ADDED_COLUMNS,
): { sql: string; args: unknown[] } {
  const args: unknown[] = [];
  const arg = (v: unknown): string => {
    args.push(v);
    return param(args.length);
  };
  const period =
    q.per === 'minute'
      ? 'minute'
      : q.per === 'hour'
        ? '(minute - (minute % 60))'
        : `CAST(${arg(q.fromMinute)} AS BIGINT)`;
  const flows = q.byFlow === true ? ['tenant', 'flow'] : [];
  const where = [`minute >= ${arg(q.fromMinute)}`, `minute < ${arg(q.toMinute)}`];
  where.push(q.level === 'delivery' ? "step = ''" : "door = ''");
  // Every flow summed: the all-flows rows alone; otherwise never them (they would count twice).
  const everyFlow = q.level === 'delivery' && q.byFlow !== true && q.tenant === undefined && q.flow === undefined;
  where.push(everyFlow ? "tenant = '' AND flow = ''" : "tenant <> ''");
  if (q.tenant !== undefined) where.push(`tenant = ${arg(q.tenant)}`);
  if (q.door !== undefined) where.push(`door = ${arg(q.door)}`);
  if (q.flow !== undefined) where.push(`flow = ${arg(q.flow)}`);
  const groups = [...(q.per === 'window' ? [] : [period]), ...flows, 'door', 'step'];
  const sums = sum.map((c) => `SUM(${c}) AS ${c}`).join(', ');
  const named = q.byFlow === true ? 'tenant, flow' : "'' AS tenant, '' AS flow";
  const sql =
    `SELECT ${period} AS minute, ${named}, door, step, ${sums} FROM rollups WHERE ${where.join(' AND ')} ` +
    `GROUP BY ${groups.join(', ')} ORDER BY ${groups.join(', ')}`;
  return { sql, args };
}

/** A stored row (columns as both schemas name them) as a RollupRow. */
export function rollupFromRecord(r: Record<string, unknown>): RollupRow {
  return {
    minute: Number(r.minute),
    tenant: String(r.tenant),
    flow: String(r.flow),
    door: String(r.door),
    step: String(r.step),
    count: Number(r.count),
    failures: Number(r.failures),
    sumMs: Number(r.sum_ms),
    buckets: BUCKET_COLUMNS.map((c) => Number(r[c])),
  };
}

/** A stored row's counts (columns as both schemas name them) as a RollupCount. */
export function rollupCountFromRecord(r: Record<string, unknown>): RollupCount {
  return {
    minute: Number(r.minute),
    tenant: String(r.tenant),
    flow: String(r.flow),
    door: String(r.door),
    step: String(r.step),
    count: Number(r.count),
    failures: Number(r.failures),
  };
}

/** One queue's figures as sampled in a minute (the last sample of the minute is kept). */
export interface QueueSample {
  readonly minute: number;
  readonly tenant: string;
  readonly flow: string;
  /** Messages waiting for their first delivery. */
  readonly backlog: number;
  readonly retries: number;
  /** Deliveries finished, as QueueStats.processed counts them (it drops to zero when a file queue drains). */
  readonly processed: number;
  readonly dead: number;
}

export interface QueueSampleQuery {
  tenant?: string;
  flow?: string;
  /** Inclusive, whole minutes since the epoch. */
  fromMinute: number;
  /** Exclusive. */
  toMinute: number;
}

export const QUEUE_SAMPLE_COLUMNS: readonly string[] = [
  'minute',
  'tenant',
  'flow',
  'backlog',
  'retries',
  'processed',
  'dead',
];

export function queueSampleValues(s: QueueSample): unknown[] {
  return [s.minute, s.tenant, s.flow, s.backlog, s.retries, s.processed, s.dead];
}

/** The SELECT both stores run for `queueSamples(q)`, ordered by tenant, flow, minute. */
export function queueSampleSelect(q: QueueSampleQuery, param: (n: number) => string): { sql: string; args: unknown[] } {
  const args: unknown[] = [q.fromMinute, q.toMinute];
  const where = [`minute >= ${param(1)}`, `minute < ${param(2)}`];
  if (q.tenant !== undefined) {
    args.push(q.tenant);
    where.push(`tenant = ${param(args.length)}`);
  }
  if (q.flow !== undefined) {
    args.push(q.flow);
    where.push(`flow = ${param(args.length)}`);
  }
  return {
    sql: `SELECT ${QUEUE_SAMPLE_COLUMNS.join(', ')} FROM queue_samples WHERE ${where.join(' AND ')} ORDER BY tenant, flow, minute`,
    args,
  };
}

export function queueSampleFromRecord(r: Record<string, unknown>): QueueSample {
  return {
    minute: Number(r.minute),
    tenant: String(r.tenant),
    flow: String(r.flow),
    backlog: Number(r.backlog),
    retries: Number(r.retries),
    processed: Number(r.processed),
    dead: Number(r.dead),
  };
}

/** The upsert both writers run: a later sample of the same minute replaces the earlier one. */
export const QUEUE_SAMPLE_UPSERT_TAIL = `ON CONFLICT (tenant, flow, minute) DO UPDATE SET ${['backlog', 'retries', 'processed', 'dead'].map((c) => `${c} = excluded.${c}`).join(', ')}`;

/** What a process hands its event writer besides the rows: the rollups it counted and the queue figures it sampled. */
export interface Aggregates {
  readonly rollups?: readonly RollupRow[];
  readonly queueSamples?: readonly QueueSample[];
}

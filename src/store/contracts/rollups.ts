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

/** A stored row (columns as both schemas name them) as a RollupRow: its counts, its time and its histogram. */
export function rollupFromRecord(r: Record<string, unknown>): RollupRow {
  return {
    ...rollupCountFromRecord(r),
    sumMs: Number(r.sum_ms),
    buckets: BUCKET_COLUMNS.map((c) => Number(r[c])),
  };
}

/**
 * Per-flow delivery totals in blocks of BLOCK_MINUTES minutes (`rollup_blocks`: log migration 10,
 * PostgreSQL 0010), for `flowTotals`: the busiest flows of the hour read about 7 block rows and a
 * few minutes' rows per flow instead of 60 minutes' rows per flow and door. A block row is the sum
 * of the delivery rows (every door) of its flow and minutes `block .. block + 9`; the all-flows rows
 * (tenant `''`) have none. The writers add to it in the transaction that adds the minute rows, and
 * retention takes the minutes it deletes off a block the cutoff falls inside, so a block always
 * equals the sum of the minute rows it covers.
 */
export const BLOCK_MINUTES = 10;

/** The first minute of the block holding `minute` (`minute - minute % 10`, as the SQL computes it). */
export function rollupBlock(minute: number): number {
  return minute - (minute % BLOCK_MINUTES);
}

/** What a writer adds to a block's row. */
export interface BlockAdd {
  readonly block: number;
  readonly tenant: string;
  readonly flow: string;
  count: number;
  failures: number;
}

/** A flow's deliveries (every door) over a window: what `flowTotals` answers. */
export interface FlowTotal {
  readonly tenant: string;
  readonly flow: string;
  readonly count: number;
  readonly failures: number;
}

export const ROLLUP_BLOCK_COLUMNS: readonly string[] = ['block', 'tenant', 'flow', 'count', 'failures'];

/** The upsert's tail both writers run: a block's row is added to. */
export const ROLLUP_BLOCK_UPSERT_TAIL =
  'ON CONFLICT (block, tenant, flow) DO UPDATE SET count = rollup_blocks.count + excluded.count, failures = rollup_blocks.failures + excluded.failures';

/**
 * The delivery rows of flows (not the all-flows rows, not step rows) summed per block and flow:
 * what a writer adds to rollup_blocks beside the rows. Ordered by tenant, flow and block (the
 * order two PostgreSQL nodes take the rows' locks in).
 */
export function blockAdds(rows: readonly RollupRow[]): BlockAdd[] {
  const byKey = new Map<string, BlockAdd>();
  for (const r of rows) {
    if (r.step !== '' || r.tenant === '') continue;
    const block = rollupBlock(r.minute);
    const key = `${block}\u0000${r.tenant}\u0000${r.flow}`;
    const b = byKey.get(key);
    if (b === undefined)
      byKey.set(key, { block, tenant: r.tenant, flow: r.flow, count: r.count, failures: r.failures });
    else {
      b.count += r.count;
      b.failures += r.failures;
    }
  }
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...byKey.values()].sort((a, b) => cmp(a.tenant, b.tenant) || cmp(a.flow, b.flow) || a.block - b.block);
}

export function blockAddValues(b: BlockAdd): unknown[] {
  return [b.block, b.tenant, b.flow, b.count, b.failures];
}

/** How `flowTotals` reads a partial block at an edge of its window. */
export type EdgeRead = 'add' | 'subtract';

/**
 * The minutes `flowTotals(from, to)` reads besides its blocks, each added or subtracted, and the
 * blocks `[fromBlock, toBlock)`. At the leading edge, the minutes of `from`'s block before `from`
 * are subtracted from that block, or the minutes from `from` to the next block are added, whichever
 * is fewer minutes. At the trailing edge the minutes from `to` to the end of its block are
 * subtracted from that block: a window that ends now (the busiest flows of the last hour) has
 * nothing written there yet, so the edge reads nothing at all (adding the minutes before `to`
 * would read up to 9 minutes of every flow). `edges` overrides both choices (measurements, tests).
 * A window inside one block with both edges added is its minutes alone.
 */
export function flowTotalsPlan(
  fromMinute: number,
  toMinute: number,
  edges?: { lead: EdgeRead; trail: EdgeRead },
): { fromBlock: number; toBlock: number; minutes: { from: number; to: number; sign: 1 | -1 }[] } {
  const minutes: { from: number; to: number; sign: 1 | -1 }[] = [];
  if (toMinute <= fromMinute) return { fromBlock: 0, toBlock: 0, minutes };
  const leadFloor = rollupBlock(fromMinute);
  const leadOff = fromMinute - leadFloor;
  const lead: EdgeRead = edges?.lead ?? (leadOff <= BLOCK_MINUTES - leadOff ? 'subtract' : 'add');
  const trail: EdgeRead = edges?.trail ?? 'subtract';
  const trailFloor = rollupBlock(toMinute);
  const trailCeil = trailFloor === toMinute ? toMinute : trailFloor + BLOCK_MINUTES;
  if (leadOff !== 0 && lead === 'add' && toMinute <= leadFloor + BLOCK_MINUTES) {
    // Inside one block, its leading part added: the window's minutes alone.
    minutes.push({ from: fromMinute, to: toMinute, sign: 1 });
    return { fromBlock: 0, toBlock: 0, minutes };
  }
  let fromBlock = leadFloor;
  if (leadOff !== 0) {
    if (lead === 'subtract') minutes.push({ from: leadFloor, to: fromMinute, sign: -1 });
    else {
      fromBlock = leadFloor + BLOCK_MINUTES;
      minutes.push({ from: fromMinute, to: fromBlock, sign: 1 });
    }
  }
  let toBlock = trailCeil;
  if (trailCeil !== toMinute) {
    // With the leading edge added, the window spans two blocks or more here (trailFloor >=
    // fromBlock): the two edges' minutes never overlap.
    if (trail === 'subtract') minutes.push({ from: toMinute, to: trailCeil, sign: -1 });
    else {
      toBlock = trailFloor;
      minutes.push({ from: trailFloor, to: toMinute, sign: 1 });
    }
  }
  return { fromBlock, toBlock, minutes };
}

/**
 * The one SELECT both stores run for `flowTotals(fromMinute, toMinute)`: the blocks of the plan
 * (flowTotalsPlan) and its edge minutes' delivery rows (from the covering index rollups_delivery),
 * signed and summed per flow; flows whose sum is nothing are left out. `param` as in rollupSelect.
 */
export function flowTotalsSelect(
  fromMinute: number,
  toMinute: number,
  param: (n: number) => string,
  edges?: { lead: EdgeRead; trail: EdgeRead },
): { sql: string; args: unknown[] } {
  const plan = flowTotalsPlan(fromMinute, toMinute, edges);
  const args: unknown[] = [];
  const arg = (v: unknown): string => {
    args.push(v);
    return param(args.length);
  };
  const parts: string[] = [];
  if (plan.toBlock > plan.fromBlock)
    parts.push(
      `SELECT tenant, flow, count, failures FROM rollup_blocks WHERE block >= ${arg(plan.fromBlock)} AND block < ${arg(plan.toBlock)}`,
    );
  for (const m of plan.minutes) {
    if (m.to <= m.from) continue;
    const sign = m.sign === 1 ? '' : '-';
    parts.push(
      `SELECT tenant, flow, ${sign}count AS count, ${sign}failures AS failures FROM rollups ` +
        `WHERE minute >= ${arg(m.from)} AND minute < ${arg(m.to)} AND step = '' AND tenant <> ''`,
    );
  }
  if (parts.length === 0) parts.push(`SELECT '' AS tenant, '' AS flow, 0 AS count, 0 AS failures`);
  const sql =
    `SELECT tenant, flow, SUM(count) AS count, SUM(failures) AS failures FROM (${parts.join(' UNION ALL ')}) AS t ` +
    'GROUP BY tenant, flow HAVING SUM(count) <> 0 OR SUM(failures) <> 0 ORDER BY tenant, flow';
  return { sql, args };
}

export function flowTotalFromRecord(r: Record<string, unknown>): FlowTotal {
  return { tenant: String(r.tenant), flow: String(r.flow), count: Number(r.count), failures: Number(r.failures) };
}

/**
 * Retention's cut inside a block (`minute` not a block's first): the delivery rows of minutes
 * `[rollupBlock(minute), minute)`, about to be deleted, taken off their flows' block rows, so the
 * block still equals the minutes it covers. Run before the delete, in its transaction; the same
 * statement on both stores. Undefined when the cut falls on a block's first minute.
 */
export function blockTrimUpdate(
  minute: number,
  param: (n: number) => string,
): { sql: string; args: unknown[] } | undefined {
  const block = rollupBlock(minute);
  if (block === minute) return undefined;
  const sql =
    `UPDATE rollup_blocks SET count = rollup_blocks.count - gone.n, failures = rollup_blocks.failures - gone.f FROM ` +
    `(SELECT tenant, flow, SUM(count) AS n, SUM(failures) AS f FROM rollups WHERE minute >= ${param(1)} AND minute < ${param(2)} ` +
    `AND step = '' AND tenant <> '' GROUP BY tenant, flow) AS gone ` +
    `WHERE rollup_blocks.block = ${param(3)} AND rollup_blocks.tenant = gone.tenant AND rollup_blocks.flow = gone.flow`;
  return { sql, args: [block, minute, block] };
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

/**
 * What the service (or one flow) did over time, for the Overview's and a flow page's charts:
 * deliveries, failures and p50/p95 latency per minute for the last hour and per hour for the last
 * day, and the busiest flows with a sparkline each. Read from the per-minute rollups only
 * (docs/events.md), never from the log's rows.
 */
import { latencyQuantile, LATENCY_BUCKETS, type EventLogStore } from '../../store/contracts/index.js';
import { sparklineSvg, timeChartSvg } from '../diagram/chart-svg.js';
import { minuteRange } from './flow-numbers.js';

export interface ActivityPoint {
  /** The period's first minute, whole minutes since the epoch. */
  readonly minute: number;
  readonly count: number;
  readonly failures: number;
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
}

export interface Activity {
  readonly per: 'minute' | 'hour';
  /** Every period of the window, oldest first, zero where nothing ran. */
  readonly points: readonly ActivityPoint[];
}

/** The last hour per minute and the last day per hour. */
export const WINDOWS = { minute: 60, hour: 24 } as const;

/** Deliveries (all doors) per period over the last WINDOWS[per] periods, of one flow or all. */
export async function activity(
  events: EventLogStore,
  scope: { readonly tenant?: string; readonly flow?: string },
  per: 'minute' | 'hour',
  nowMs: number = Date.now(),
): Promise<Activity> {
  const span = per === 'minute' ? WINDOWS.minute : WINDOWS.hour * 60;
  let { fromMinute, toMinute } = minuteRange(span, nowMs);
  if (per === 'hour') {
    // Whole hours: the current one and the 23 before it.
    toMinute = toMinute - 1 - ((toMinute - 1) % 60) + 60;
    fromMinute = toMinute - span;
  }
  const rows = await events.rollups({ ...scope, fromMinute, toMinute, level: 'delivery', per });
  const step = per === 'minute' ? 1 : 60;
  const points: ActivityPoint[] = [];
  for (let minute = fromMinute; minute < toMinute; minute += step) {
    const buckets = new Array<number>(LATENCY_BUCKETS).fill(0);
    let count = 0;
    let failures = 0;
    // A period's rows are one per door: summed here.
    for (const r of rows) {
      if (r.minute !== minute) continue;
      count += r.count;
      failures += r.failures;
      for (let i = 0; i < LATENCY_BUCKETS; i++) buckets[i]! += r.buckets[i]!;
    }
    points.push({
      minute,
      count,
      failures,
      p50Ms: latencyQuantile(buckets, 0.5),
      p95Ms: latencyQuantile(buckets, 0.95),
    });
  }
  return { per, points };
}

/** A flow's last hour: its totals and its deliveries per minute. */
export interface FlowActivity {
  readonly tenant: string;
  readonly flow: string;
  readonly count: number;
  readonly failures: number;
  readonly perMinute: readonly number[];
}

/** The flows that ran in the last hour, busiest first (then by name), at most `limit`. */
export async function busiestFlows(
  events: EventLogStore,
  nowMs: number = Date.now(),
  limit = 10,
): Promise<FlowActivity[]> {
  const { fromMinute, toMinute } = minuteRange(WINDOWS.minute, nowMs);
  // The hour's totals per flow (doors summed), from the store's 10-minute blocks with the partial
  // blocks at the edges corrected by their minutes; then the minutes of the busiest alone: never
  // every flow's every minute.
  const totals = await events.flowTotals(fromMinute, toMinute);
  const busiest = [...totals]
    .sort((a, b) => b.count - a.count || a.tenant.localeCompare(b.tenant) || a.flow.localeCompare(b.flow))
    .slice(0, limit);
  const out: FlowActivity[] = [];
  for (const f of busiest) {
    const perMinute = new Array<number>(WINDOWS.minute).fill(0);
    const scope = { tenant: f.tenant, flow: f.flow, fromMinute, toMinute };
    for (const r of await events.rollupCounts({ ...scope, level: 'delivery', per: 'minute' }))
      perMinute[r.minute - fromMinute]! += r.count;
    out.push({ ...f, perMinute });
  }
  return out;
}

/** The two charts of a window: deliveries and failures as bars, p50 and p95 as lines. */
export function activityCharts(a: Activity, what: string): { readonly deliveries: string; readonly latency: string } {
  const times = a.points.map((p) => p.minute * 60_000);
  const span = a.per === 'minute' ? 'last hour, per minute' : 'last day, per hour';
  return {
    deliveries: timeChartSvg({
      title: `${what}: deliveries and failures (${span})`,
      times,
      kind: 'bars',
      per: a.per,
      series: [
        { name: 'deliveries', colour: '#3b6fd1', values: a.points.map((p) => p.count) },
        { name: 'failures', colour: '#c62828', values: a.points.map((p) => p.failures) },
      ],
    }),
    latency: timeChartSvg({
      title: `${what}: latency (${span})`,
      times,
      kind: 'lines',
      per: a.per,
      unit: 'ms',
      series: [
        { name: 'p50', colour: '#3b6fd1', values: a.points.map((p) => p.p50Ms) },
        { name: 'p95', colour: '#e07b00', values: a.points.map((p) => p.p95Ms) },
      ],
    }),
  };
}

/** A flow's sparkline of deliveries per minute over the last hour. */
export function flowSparkline(f: FlowActivity): string {
  return sparklineSvg(f.perMinute, `${f.tenant}/${f.flow}: ${f.count} deliveries in the last hour, per minute`);
}

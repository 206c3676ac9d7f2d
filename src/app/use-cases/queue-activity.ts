/**
 * Each queue over time, for the Queues page's charts, per minute over the last hour: its backlog
 * and dead letters as `svc serve` sampled them (every 15 s; the last sample of a minute is kept),
 * and the deliveries its workers ran without failing, from the rollups (docs/events.md).
 */
import type { EventLogStore, QueueSample } from '../../store/contracts/index.js';
import { timeChartSvg } from '../diagram/chart-svg.js';
import { queueFigures, type DlqTarget } from './dlq.js';
import { minuteRange } from './flow-numbers.js';
import { WINDOWS } from './activity.js';

/** Every queue's figures now, as samples of the current minute. */
export async function sampleQueues(target: DlqTarget, nowMs: number = Date.now()): Promise<QueueSample[]> {
  const minute = Math.floor(nowMs / 60_000);
  return (await queueFigures(target, nowMs)).map((q) => ({
    minute,
    tenant: q.tenant,
    flow: q.flow,
    backlog: q.pending,
    retries: q.retriesScheduled,
    processed: q.processed,
    dead: q.deadLettersPending,
  }));
}

export interface QueueSeries {
  readonly tenant: string;
  readonly flow: string;
  /** The minutes of the window, oldest first. */
  readonly minutes: readonly number[];
  /** Null where no sample was taken that minute (the server was not running). */
  readonly backlog: ReadonlyArray<number | null>;
  readonly dead: ReadonlyArray<number | null>;
  /**
   * Deliveries a worker ran in the minute without failing (succeeded or filtered), from the
   * rollups; a fault-handled one counts as failed there, so it is not in this line.
   */
  readonly processed: readonly number[];
}

/** The last hour of each queue (of a tenant or flow when given), per minute. */
export async function queueActivity(
  events: EventLogStore,
  scope: { readonly tenant?: string; readonly flow?: string },
  nowMs: number = Date.now(),
): Promise<QueueSeries[]> {
  const { fromMinute, toMinute } = minuteRange(WINDOWS.minute, nowMs);
  const samples = await events.queueSamples({ ...scope, fromMinute, toMinute });
  const runs = await events.rollupCounts({
    ...scope,
    fromMinute,
    toMinute,
    level: 'delivery',
    door: 'queue',
    per: 'minute',
    byFlow: true,
  });
  const minutes = Array.from({ length: toMinute - fromMinute }, (_, i) => fromMinute + i);
  const queues = new Map<string, { tenant: string; flow: string; at: Map<number, QueueSample>; processed: number[] }>();
  const queueOf = (tenant: string, flow: string) => {
    const key = `${tenant}/${flow}`;
    let q = queues.get(key);
    if (q === undefined) {
      q = { tenant, flow, at: new Map(), processed: new Array<number>(minutes.length).fill(0) };
      queues.set(key, q);
    }
    return q;
  };
  for (const s of samples) queueOf(s.tenant, s.flow).at.set(s.minute, s);
  for (const r of runs) {
    if (r.door !== 'queue') continue;
    queueOf(r.tenant, r.flow).processed[r.minute - fromMinute]! += r.count - r.failures;
  }
  return [...queues.values()]
    .sort((a, b) => a.tenant.localeCompare(b.tenant) || a.flow.localeCompare(b.flow))
    .map((q) => ({
      tenant: q.tenant,
      flow: q.flow,
      minutes,
      backlog: minutes.map((m) => q.at.get(m)?.backlog ?? null),
      dead: minutes.map((m) => q.at.get(m)?.dead ?? null),
      processed: q.processed,
    }));
}

/** A queue's chart: backlog, processed per minute and dead letters, as lines. */
export function queueChart(q: QueueSeries): string {
  return timeChartSvg({
    title: `${q.tenant}/${q.flow}: backlog, processed, dead letters (last hour, per minute)`,
    times: q.minutes.map((m) => m * 60_000),
    kind: 'lines',
    per: 'minute',
    series: [
      { name: 'backlog', colour: '#3b6fd1', values: q.backlog },
      { name: 'processed', colour: '#2e8b57', values: q.processed },
      { name: 'dead letters', colour: '#c62828', values: q.dead },
    ],
  });
}

/**
 * What a flow did in a recent window, for its diagram's live numbers: deliveries per door, and per
 * step the runs, failures and p95 time. Read from the per-minute rollups (never the event log), so
 * it costs the same with a million log rows as with none.
 */
import { SvcError } from '../../common/errors.js';
import { latencyQuantile, type EventLogStore } from '../../store/contracts/index.js';
import type { DiagramNumbers } from '../diagram/diagram-svg.js';

/** The windows a page may ask for, by the name in its URL, in minutes. */
export const NUMBER_WINDOWS: Readonly<Record<string, number>> = Object.freeze({
  '15m': 15,
  '1h': 60,
  '6h': 360,
  '24h': 1440,
});
export const DEFAULT_WINDOW = '1h';

/**
 * The window named `name` in minutes (the default when absent).
 * @throws SvcError SVC_ERR_INVALID_INPUT for a name it does not know, with the ones it does
 */
export function windowMinutes(name: string | undefined): number {
  const key = name ?? DEFAULT_WINDOW;
  // Own keys only: `constructor` or `__proto__` name no window.
  if (!Object.hasOwn(NUMBER_WINDOWS, key))
    throw new SvcError('SVC_ERR_INVALID_INPUT', `window must be one of ${Object.keys(NUMBER_WINDOWS).join(', ')}`);
  return NUMBER_WINDOWS[key]!;
}

/** The last `minutes` whole minutes up to and including the current one. */
export function minuteRange(minutes: number, nowMs: number): { fromMinute: number; toMinute: number } {
  const toMinute = Math.floor(nowMs / 60_000) + 1;
  return { fromMinute: toMinute - minutes, toMinute };
}

export async function flowNumbers(
  events: EventLogStore,
  tenant: string,
  flow: string,
  minutes: number,
  nowMs: number = Date.now(),
): Promise<DiagramNumbers> {
  const range = { tenant, flow, ...minuteRange(minutes, nowMs), per: 'window' as const };
  const doors = await events.rollups({ ...range, level: 'delivery' });
  const steps = await events.rollups({ ...range, level: 'step' });
  return {
    doors: Object.fromEntries(doors.map((d) => [d.door, d.count])),
    steps: new Map(
      steps.map((s) => [s.step, { runs: s.count, failures: s.failures, p95Ms: latencyQuantile(s.buckets, 0.95) }]),
    ),
  };
}

/** `svc simulate`'s measurements: per-flow and total latency histograms (HdrHistogram), status counts, request rates, and the summary built from them. */
import * as hdr from 'hdr-histogram-js';
import type { SimRoute } from './plan.js';

/** Latencies are recorded in microseconds up to this (60 s); longer ones are clamped so none is lost. */
const HIGHEST_TRACKABLE_US = 60_000_000;

/** A status code as a string, or `error` for a request that got no answer (connection refused, reset). */
export type StatusKey = string;

/** The figures of one row (a flow, or the total). */
export interface StatsRow {
  readonly requests: number;
  readonly run: number;
  readonly enqueue: number;
  /** Requests per second over the whole run. */
  readonly rps: number;
  readonly latency_ms: { readonly p50: number; readonly p95: number; readonly p99: number; readonly max: number };
  /** Count by status code (`"200"`, `"202"`, ..., `"error"`). */
  readonly statuses: Readonly<Record<StatusKey, number>>;
}

/** Why the run ended. */
export type StopReason = 'duration' | 'interrupted' | 'unauthorized' | 'nothing_left';

export interface SimSummary {
  readonly url: string;
  /** Prefix of every request's X-Correlation-ID (`<run_id>-<n>`), to find the run in the log. */
  readonly run_id: string;
  readonly stopped: StopReason;
  readonly elapsed_secs: number;
  readonly connections: number;
  readonly rate: number | null;
  readonly total: StatsRow;
  readonly flows: ReadonlyArray<StatsRow & { readonly flow: string }>;
  /** Flows taken out of the rotation by a 403 or 404, with the answer that did it, in the order withdrawn. */
  readonly withdrawn: ReadonlyArray<WithdrawnFlow>;
}

/** A flow a 403 or 404 took out of the rotation (both routes). */
export interface WithdrawnFlow {
  readonly flow: string;
  /** The route whose answer withdrew it. */
  readonly route: 'run' | 'enqueue';
  readonly status: number;
  /** The answer's error text. */
  readonly reason: string;
}

class Tally {
  readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_TRACKABLE_US,
    numberOfSignificantValueDigits: 3,
  });
  readonly statuses: Record<StatusKey, number> = {};
  requests = 0;
  run = 0;
  enqueue = 0;
  /** Requests since the last `tick()`: the live view's requests per second. */
  window = 0;

  record(route: SimRoute, status: StatusKey, latencyMs: number): void {
    const us = Math.min(HIGHEST_TRACKABLE_US, Math.max(1, Math.round(latencyMs * 1000)));
    this.histogram.recordValue(us);
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    this.requests++;
    this.window++;
    this[route]++;
  }

  row(elapsedSecs: number): StatsRow {
    const ms = (p: number) => round3(this.requests === 0 ? 0 : this.histogram.getValueAtPercentile(p) / 1000);
    return {
      requests: this.requests,
      run: this.run,
      enqueue: this.enqueue,
      rps: elapsedSecs > 0 ? round3(this.requests / elapsedSecs) : 0,
      latency_ms: {
        p50: ms(50),
        p95: ms(95),
        p99: ms(99),
        max: round3(this.requests === 0 ? 0 : this.histogram.maxValue / 1000),
      },
      statuses: { ...this.statuses },
    };
  }
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** A live row: the summary figures plus the last interval's requests per second. */
export type LiveRow = StatsRow & { readonly label: string; readonly currentRps: number };

/** Everything measured so far, per flow (`tenant/flow`) and in total. */
export class SimStats {
  readonly #total = new Tally();
  readonly #flows = new Map<string, Tally>();

  record(flow: string, route: SimRoute, status: StatusKey, latencyMs: number): void {
    let t = this.#flows.get(flow);
    if (t === undefined) this.#flows.set(flow, (t = new Tally()));
    t.record(route, status, latencyMs);
    this.#total.record(route, status, latencyMs);
  }

  get requests(): number {
    return this.#total.requests;
  }

  /** Rows for the live view; the per-second rate is the requests since the last tick over `intervalSecs`. Resets the interval. */
  tick(elapsedSecs: number, intervalSecs: number): { flows: LiveRow[]; total: LiveRow } {
    const live = (label: string, t: Tally): LiveRow => {
      const row = { ...t.row(elapsedSecs), label, currentRps: intervalSecs > 0 ? round3(t.window / intervalSecs) : 0 };
      t.window = 0;
      return row;
    };
    const flows = [...this.#flows.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([label, t]) => live(label, t));
    return { flows, total: live('total', this.#total) };
  }

  summary(head: Omit<SimSummary, 'total' | 'flows' | 'elapsed_secs'>, elapsedSecs: number): SimSummary {
    return {
      ...head,
      elapsed_secs: round3(elapsedSecs),
      total: this.#total.row(elapsedSecs),
      flows: [...this.#flows.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([flow, t]) => ({ flow, ...t.row(elapsedSecs) })),
    };
  }
}

/** Status counts as `200:12 202:5`, in code order. */
export function formatStatuses(statuses: Readonly<Record<StatusKey, number>>): string {
  return Object.keys(statuses)
    .sort()
    .map((k) => `${k}:${statuses[k]}`)
    .join(' ');
}

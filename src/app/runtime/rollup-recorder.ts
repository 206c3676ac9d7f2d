/**
 * The per-minute rollups of the running process (store/contracts/rollups.ts), counted in memory:
 * each delivery by door (as the executor tells its observer) and each step run (the engine's step
 * timer). Nothing here writes: `drain()` hands the rows counted so far to whoever adds them to the
 * store (serve/rollups.ts, every few seconds and at shutdown), off the request path.
 */
import { LATENCY_BUCKETS, latencyBucket, type RollupRow } from '../../store/contracts/index.js';
import type { FlowIR } from '../../ir/types.js';
import type { ExecutionObserver, ExecutionOutcome } from './execution-observer.js';
import type { RunMeta } from './run-meta.js';

/**
 * A delivery failed when it did not end as the flow meant it to: it failed, a fault section
 * answered it, or it was refused as busy. `succeeded` and `filtered` (a false condition) did not.
 */
export function deliveryFailed(outcome: ExecutionOutcome): boolean {
  return outcome === 'failed' || outcome === 'fault_handled' || outcome === 'busy';
}

/** One flow's rows of a minute: a row per door its deliveries came by, a row per step that ran. */
interface FlowCounts {
  readonly doors: Map<string, RollupRow>;
  readonly steps: Map<string, RollupRow>;
}

/** What a minute counted, found by tenant, then flow, then door or step: short keys, no key built per count. */
interface MinuteCounts {
  readonly minute: number;
  readonly flows: Map<string, Map<string, FlowCounts>>;
  /** The all-flows rows (tenant and flow ''), by door. */
  readonly all: Map<string, RollupRow>;
}

function emptyMinute(minute: number): MinuteCounts {
  return { minute, flows: new Map(), all: new Map() };
}

/** The row of `key` in `rows`, made (at zero) on its first count. */
function rowIn(
  rows: Map<string, RollupRow>,
  minute: number,
  tenant: string,
  flow: string,
  door: string,
  step: string,
): RollupRow {
  const key = door === '' ? step : door;
  let row = rows.get(key);
  if (row === undefined) {
    row = {
      minute,
      tenant,
      flow,
      door,
      step,
      count: 0,
      failures: 0,
      sumMs: 0,
      buckets: new Array<number>(LATENCY_BUCKETS).fill(0),
    };
    rows.set(key, row);
  }
  return row;
}

function count(row: RollupRow, ms: number, failed: boolean): void {
  row.count++;
  if (failed) row.failures++;
  row.sumMs += ms;
  row.buckets[latencyBucket(ms)]!++;
}

/** A minute's rows: each flow's doors then steps, then the all-flows rows. */
function rowsOf(m: MinuteCounts): RollupRow[] {
  const rows: RollupRow[] = [];
  for (const flows of m.flows.values())
    for (const f of flows.values()) rows.push(...f.doors.values(), ...f.steps.values());
  rows.push(...m.all.values());
  return rows;
}

export class RollupRecorder implements ExecutionObserver {
  /** The minute being counted; rows of earlier minutes wait in #earlier until the next drain. */
  #current: MinuteCounts;
  #earlier: RollupRow[] = [];
  #last: { minute: MinuteCounts; tenant: string; flow: string; counts: FlowCounts } | undefined;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.#current = emptyMinute(Math.floor(now() / 60_000));
  }

  executed(tenant: string, flow: string, door: RunMeta['door'], outcome: ExecutionOutcome, seconds: number): void {
    const failed = deliveryFailed(outcome);
    const m = this.#minute();
    const ms = seconds * 1000;
    count(rowIn(this.#flow(m, tenant, flow).doors, m.minute, tenant, flow, door, ''), ms, failed);
    // And into the all-flows row (tenant and flow ''), so a chart of every flow reads one row a minute.
    count(rowIn(m.all, m.minute, '', '', door, ''), ms, failed);
  }

  /** The engine's step timer (RunDeps.stepTimer). */
  readonly stepRan = (ir: FlowIR, step: string, ms: number, failed: boolean): void => {
    const m = this.#minute();
    count(rowIn(this.#flow(m, ir.tenant, ir.flow).steps, m.minute, ir.tenant, ir.flow, '', step), ms, failed);
  };

  /** The rows counted since the last drain (one per key and minute), and a fresh start. */
  drain(): RollupRow[] {
    const rows = this.#earlier;
    rows.push(...rowsOf(this.#current));
    this.#earlier = [];
    this.#current = emptyMinute(this.#current.minute);
    return rows;
  }

  /** The current minute's counts; when the clock has moved on, the last minute's rows are set aside first. */
  #minute(): MinuteCounts {
    const minute = Math.floor(this.#now() / 60_000);
    if (minute !== this.#current.minute) {
      this.#earlier.push(...rowsOf(this.#current));
      this.#current = emptyMinute(minute);
    }
    return this.#current;
  }

  #flow(m: MinuteCounts, tenant: string, flow: string): FlowCounts {
    // A delivery's steps and its end are told one after the other: the last flow found is most often the one asked for.
    const last = this.#last;
    if (last !== undefined && last.minute === m && last.tenant === tenant && last.flow === flow) return last.counts;
    let flows = m.flows.get(tenant);
    if (flows === undefined) m.flows.set(tenant, (flows = new Map()));
    let counts = flows.get(flow);
    if (counts === undefined) flows.set(flow, (counts = { doors: new Map(), steps: new Map() }));
    this.#last = { minute: m, tenant, flow, counts };
    return counts;
  }
}
/** Tells every observer in turn (metrics and the rollups). */
export function bothObservers(a: ExecutionObserver | undefined, b: ExecutionObserver): ExecutionObserver {
  if (a === undefined) return b;
  return {
    executed(tenant, flow, door, outcome, seconds) {
      a.executed(tenant, flow, door, outcome, seconds);
      b.executed(tenant, flow, door, outcome, seconds);
    },
  };
}

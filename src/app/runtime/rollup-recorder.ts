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

export class RollupRecorder implements ExecutionObserver {
  #rows = new Map<string, RollupRow>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  executed(tenant: string, flow: string, door: RunMeta['door'], outcome: ExecutionOutcome, seconds: number): void {
    const failed = deliveryFailed(outcome);
    this.#add(tenant, flow, door, '', seconds * 1000, failed);
    // And into the all-flows row (tenant and flow ''), so a chart of every flow reads one row a minute.
    this.#add('', '', door, '', seconds * 1000, failed);
  }

  /** The engine's step timer (RunDeps.stepTimer). */
  readonly stepRan = (ir: FlowIR, step: string, ms: number, failed: boolean): void => {
    this.#add(ir.tenant, ir.flow, '', step, ms, failed);
  };

  /** The rows counted since the last drain (one per key), and a fresh start. */
  drain(): RollupRow[] {
    const rows = [...this.#rows.values()];
    this.#rows = new Map();
    return rows;
  }

  #add(tenant: string, flow: string, door: string, step: string, ms: number, failed: boolean): void {
    const minute = Math.floor(this.#now() / 60_000);
    const key = `${minute}\u0000${tenant}\u0000${flow}\u0000${door}\u0000${step}`;
    let row = this.#rows.get(key);
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
      this.#rows.set(key, row);
    }
    row.count++;
    if (failed) row.failures++;
    row.sumMs += ms;
    row.buckets[latencyBucket(ms)]!++;
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

/** What the executor tells of each execution it ran (metrics); the composition root supplies the listener. */
import type { RunMeta } from './run-meta.js';

/**
 * How an execution ended: `succeeded`, `fault_handled` (a `## Fault:` section answered),
 * `filtered` (a queue delivery whose `condition` was false), `failed` (any error, the flow's or
 * the platform's), `busy` (a synchronous door refused it before it started: too many in flight).
 */
export type ExecutionOutcome = 'succeeded' | 'fault_handled' | 'filtered' | 'failed' | 'busy';

export interface ExecutionObserver {
  /** Called once per execution, on the request path: keep it to counter increments. */
  executed(tenant: string, flow: string, door: RunMeta['door'], outcome: ExecutionOutcome, seconds: number): void;
}

export const NULL_EXECUTION_OBSERVER: ExecutionObserver = Object.freeze({ executed: () => undefined });

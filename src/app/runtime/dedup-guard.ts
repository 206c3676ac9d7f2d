/**
 * The flow-state guard around one delivery: deduplication first (a replay never touches a
 * correlation), then correlation. The executor calls it for every door.
 */
import type { FlowResult, LoadedFlow } from '../../engine/index.js';
import type { Correlations } from './correlation.js';
import type { Dedup } from './dedup.js';
import type { RunMeta } from './run-meta.js';

/** What the executor calls around a delivery of a flow with dedup or correlation keys. */
export interface RunGuard {
  around(flow: LoadedFlow, input: unknown, meta: RunMeta, run: () => Promise<FlowResult>): Promise<FlowResult>;
}

export class FlowStateGuard implements RunGuard {
  readonly #dedup: Dedup;
  readonly #correlations: Correlations;

  constructor(dedup: Dedup, correlations: Correlations) {
    this.#dedup = dedup;
    this.#correlations = correlations;
  }

  /**
   * Runs `run` under the flow's dedup and correlation declarations. A replay returns the recorded
   * result carrying `x-svc-idempotent-replay: true`; a hold-back or conflict throws SvcError 409,
   * a refusal 422, a state store failure StorageUnavailableError (503).
   */
  around(flow: LoadedFlow, input: unknown, meta: RunMeta, run: () => Promise<FlowResult>): Promise<FlowResult> {
    const { ir } = flow;
    const correlation = ir.correlation;
    const inner = correlation === undefined ? run : () => this.#correlations.around(ir, correlation, input, meta, run);
    return ir.dedup === undefined ? inner() : this.#dedup.around(ir, ir.dedup, input, meta, inner);
  }
}

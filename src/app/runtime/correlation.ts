/**
 * Correlations (`correlation_open` / `correlation_state`): an opening flow records a row for a
 * business key with a deadline; a closing flow closes it (`closed`, or `closed_late` after a
 * timeout); the reconcile pass times out open rows and enqueues the compensating flow with the
 * recorded state. Keys are fingerprints; a key is refused while any row exists for it.
 */
import { HeldBackError, SvcError } from '../../common/errors.js';
import { JSON_MAX_DEPTH, valueNestsDeeperThan } from '../../common/json-depth.js';
import type { FlowResult } from '../../engine/index.js';
import { compileExpr } from '../../expr/cel.js';
import type { CorrelationIR, FlowIR } from '../../ir/types.js';
import { keyFingerprint } from './dedup-fingerprint.js';
import { evaluateKey, keyContext } from './dedup.js';
import type { RunMeta } from './run-meta.js';
import type { CorrelationRow, FlowStateStore } from '../../store/contracts/index.js';

/** A message for the compensating flow (the same shape as FileQueueStore.append's message). */
export interface CompensationMessage {
  correlationId: string;
  payload: unknown;
}

/** Appends a message to the (tenant, flow) queue; wired to FileQueueStore.append by the service. */
export type EnqueueFn = (tenant: string, flow: string, message: CompensationMessage) => Promise<unknown>;

export interface CorrelationOptions {
  stateKey: string | undefined;
  /** @default Date.now */
  now?: () => number;
}

export class Correlations {
  readonly #repo: FlowStateStore;
  readonly #stateKey: string | undefined;
  readonly #now: () => number;

  constructor(repo: FlowStateStore, opts: CorrelationOptions) {
    this.#repo = repo;
    this.#stateKey = opts.stateKey;
    this.#now = opts.now ?? Date.now;
  }

  /** Opens (or closes) around the run: 409 while a row is open, 422 for a refusal. `decl` was checked by the compiler. */
  async around(
    ir: FlowIR,
    decl: CorrelationIR,
    input: unknown,
    meta: RunMeta,
    run: () => Promise<FlowResult>,
  ): Promise<FlowResult> {
    const ctx = keyContext(input, meta);
    const key = evaluateKey(decl.key, ctx, 'correlation_open.key');
    if (decl.kind === 'close') return this.#close(ir, decl.closes, key, run);

    const keyHash = keyFingerprint(ir.tenant, ir.flow, key, this.#stateKey);
    const now = this.#now();
    // A used key is refused before anything else is evaluated (the insert below re-checks atomically).
    const used = await this.#repo.getCorrelation(ir.tenant, ir.flow, keyHash);
    if (used !== undefined) throw refusal(used);
    const state = decl.state === undefined ? null : JSON.stringify(evaluateState(decl.state, ctx));
    const existing = await this.#repo.openCorrelation({
      tenant: ir.tenant,
      flow: ir.flow,
      key_hash: keyHash,
      step: decl.step ?? ir.steps.at(-1)?.name ?? '',
      opened_at: new Date(now).toISOString(),
      deadline: new Date(now + decl.deadlineSecs * 1000).toISOString(),
      on_timeout_flow: decl.onTimeout ?? null,
      correlation_id: meta.correlationId,
      state,
    });
    if (existing !== undefined) throw refusal(existing);
    try {
      const result = await run();
      if (result.faultHandled) await this.#repo.withdrawCorrelation(ir.tenant, ir.flow, keyHash, meta.correlationId);
      return result;
    } catch (err) {
      // The opening delivery failed: the correlation never started, so the key stays free.
      await this.#repo.withdrawCorrelation(ir.tenant, ir.flow, keyHash, meta.correlationId);
      throw err;
    }
  }

  async #close(ir: FlowIR, opener: string, key: string, run: () => Promise<FlowResult>): Promise<FlowResult> {
    const keyHash = keyFingerprint(ir.tenant, opener, key, this.#stateKey);
    const row = await this.#repo.getCorrelation(ir.tenant, opener, keyHash);
    if (row === undefined)
      throw new SvcError(
        'SVC_ERR_UNPROCESSABLE',
        `correlation refused: no correlation of flow '${opener}' exists for this key`,
      );
    if (row.status === 'closed' || row.status === 'closed_late')
      throw new SvcError(
        'SVC_ERR_UNPROCESSABLE',
        `correlation refused: the correlation for this key is already ${row.status}`,
      );
    const result = await run();
    if (!result.faultHandled)
      await this.#repo.closeCorrelation(ir.tenant, opener, keyHash, new Date(this.#now()).toISOString());
    return result;
  }

  /**
   * One reconcile pass: every open row past its deadline becomes `timed_out` (once, whichever
   * process gets there first) and its compensating flow, if any, is enqueued with the recorded state.
   * @returns the rows timed out by this pass
   */
  async reconcile(
    enqueue: EnqueueFn | undefined,
    onError: (row: CorrelationRow, err: unknown) => void,
  ): Promise<CorrelationRow[]> {
    const timedOut: CorrelationRow[] = [];
    for (const row of await this.#repo.dueCorrelations(new Date(this.#now()).toISOString())) {
      if (!(await this.#repo.markTimedOut(row.tenant, row.flow, row.key_hash))) continue;
      timedOut.push(row);
      if (row.on_timeout_flow === null) continue;
      try {
        if (enqueue === undefined) throw new Error('no queue is wired into this process');
        await enqueue(row.tenant, row.on_timeout_flow, {
          correlationId: row.correlation_id,
          payload: row.state === null ? null : JSON.parse(row.state),
        });
      } catch (err) {
        onError(row, err);
      }
    }
    return timedOut;
  }
}

function refusal(row: CorrelationRow): SvcError {
  if (row.status === 'open') return new HeldBackError('a correlation is already open for this key');
  return new SvcError(
    'SVC_ERR_UNPROCESSABLE',
    `correlation refused: the key was used by a correlation that is now ${row.status}; a key is not reused while its row exists`,
  );
}

/** The recorded state; it becomes a queued message's body, so it nests no deeper than one may. */
function evaluateState(state: Record<string, string>, ctx: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, expr] of Object.entries(state)) {
    try {
      out[name] = compileExpr(expr)(ctx);
    } catch (err) {
      throw new SvcError(
        'SVC_ERR_UNPROCESSABLE',
        `correlation refused: correlation_state.${name} could not be evaluated: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
  if (valueNestsDeeperThan(out))
    throw new SvcError(
      'SVC_ERR_UNPROCESSABLE',
      `correlation refused: correlation_state nests deeper than ${JSON_MAX_DEPTH} levels`,
    );
  return out;
}

/**
 * Deduplication around one delivery (`dedup_key`): claim the key's fingerprint, run, record the
 * outcome; a duplicate is held back (409) while in flight, replayed while done, replayed or run
 * again while failed. Run by the executor for every door.
 */
import { errorBody, HeldBackError, SvcError } from '../../common/errors.js';
import { XmlValue, isXmlValue } from '../../common/xml-value.js';
import type { FlowResult } from '../../engine/index.js';
import { compileExpr } from '../../expr/cel.js';
import type { DedupIR, FlowIR } from '../../ir/types.js';
import { keyFingerprint, keyText } from './dedup-fingerprint.js';
import type { RunMeta } from './run-meta.js';
import type { FlowStateStore, InboxRow } from '../../store/contracts/index.js';

/** The log's reason on the row of a replayed answer (its outcome is `replayed`). */
export function replayReason(firstCorrelationId: string): string {
  return `duplicate dedup_key: replayed the recorded answer of delivery ${firstCorrelationId}; the flow did not run`;
}

/** The first delivery's correlation id named by a replayReason text, if it is one. */
export function replayedFrom(reason: string): string | undefined {
  return /^duplicate dedup_key: replayed the recorded answer of delivery (\S+); the flow did not run$/.exec(
    reason,
  )?.[1];
}

/** Header on every replayed answer. */
export const REPLAY_HEADER = 'x-svc-idempotent-replay';
/** Header naming the correlation id of the delivery whose answer is replayed. */
export const FIRST_CORRELATION_HEADER = 'x-svc-first-correlation-id';

export interface DedupOptions {
  /** Installation default window (`dedup_window_hours` setting, read at startup). Hours. @default 24 */
  defaultWindowHours: number;
  /**
   * How long an in_flight claim holds before another delivery may claim the key again (a crashed
   * holder never finishes its row). Milliseconds; capped by the window.
   */
  leaseMs: number;
  /** SVC_SECRET_SVC_STATE_KEY; undefined: plain SHA-256 fingerprints. */
  stateKey: string | undefined;
  /** Clock (tests). @default Date.now */
  now?: () => number;
}

/** The context a key expression sees: the delivery as the flow's first step would. */
export function keyContext(input: unknown, meta: RunMeta): Record<string, unknown> {
  const ctx: Record<string, unknown> = { correlation_id: meta.correlationId, headers: meta.headers, input };
  if (meta.soap?.action !== undefined) ctx.soap_action = meta.soap.action;
  if (meta.soap?.version !== undefined) ctx.soap_version = meta.soap.version;
  return ctx;
}

/** Evaluates a key expression; a failure or an empty value is a 422 refusal naming the declaration. */
export function evaluateKey(expr: string, ctx: Record<string, unknown>, what: string): string {
  let value: unknown;
  try {
    value = compileExpr(expr)(ctx);
  } catch (err) {
    throw new SvcError(
      'SVC_ERR_UNPROCESSABLE',
      `${what} could not be evaluated: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const text = keyText(value);
  if (text === undefined)
    throw new SvcError(
      'SVC_ERR_UNPROCESSABLE',
      `${what} evaluated to an empty value; send a request that carries the key`,
    );
  return text;
}

export class Dedup {
  readonly #repo: FlowStateStore;
  readonly #opts: DedupOptions;
  readonly #now: () => number;

  constructor(repo: FlowStateStore, opts: DedupOptions) {
    this.#repo = repo;
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Runs `run` at most once per key and window; see the module comment for duplicates. */
  async around(
    ir: FlowIR,
    dedup: DedupIR,
    input: unknown,
    meta: RunMeta,
    run: () => Promise<FlowResult>,
  ): Promise<FlowResult> {
    const key = evaluateKey(dedup.key, keyContext(input, meta), 'dedup_key');
    const keyHash = keyFingerprint(ir.tenant, ir.flow, key, this.#opts.stateKey);
    const now = this.#now();
    const windowMs = (dedup.windowHours ?? this.#opts.defaultWindowHours) * 3_600_000;
    const expiresAt = now + windowMs;
    const outcome = await this.#repo.claim({
      tenant: ir.tenant,
      flow: ir.flow,
      keyHash,
      correlationId: meta.correlationId,
      now: iso(now),
      expiresAt: iso(expiresAt),
      leaseExpiresAt: iso(Math.min(expiresAt, now + this.#opts.leaseMs)),
      reclaimFailed: dedup.onFailure !== 'absorb',
    });
    if (!outcome.claimed) return replayOrHold(outcome.row);

    let result: FlowResult;
    try {
      result = await run();
    } catch (err) {
      const status = err instanceof SvcError ? err.status : 500;
      const body = dedup.memoizeResponse && err instanceof SvcError ? encodeBody(errorBody(err)) : null;
      await this.#finish(ir, keyHash, meta, { status: 'failed', responseStatus: status, headers: {}, body });
      throw err;
    }
    const failed = result.faultHandled;
    await this.#finish(ir, keyHash, meta, {
      status: failed ? 'failed' : 'done',
      responseStatus: result.status,
      headers: result.headers,
      body: dedup.memoizeResponse ? encodeBody(result.output) : null,
    });
    return result;
  }

  async #finish(
    ir: FlowIR,
    keyHash: string,
    meta: RunMeta,
    o: { status: 'done' | 'failed'; responseStatus: number; headers: Record<string, string>; body: string | null },
  ): Promise<void> {
    await this.#repo.finish(ir.tenant, ir.flow, keyHash, meta.correlationId, { ...o, now: iso(this.#now()) });
  }
}

/** A duplicate's answer: 409 while in flight, else the recorded status with the replay headers. */
function replayOrHold(row: InboxRow): FlowResult {
  if (row.status === 'in_flight') {
    throw new HeldBackError(
      'duplicate delivery: the first delivery with this dedup_key is still in flight; retry later',
      {
        headers: { [FIRST_CORRELATION_HEADER]: row.first_correlation_id },
        firstCorrelationId: row.first_correlation_id,
      },
    );
  }
  const recorded = row.response_headers === null ? {} : (JSON.parse(row.response_headers) as Record<string, string>);
  return {
    status: row.response_status ?? 200,
    headers: { ...recorded, [REPLAY_HEADER]: 'true', [FIRST_CORRELATION_HEADER]: row.first_correlation_id },
    output: row.response_body === null ? null : decodeBody(row.response_body),
    filtered: false,
    faultHandled: false,
    replayOf: row.first_correlation_id,
  };
}

type StoredBody = { t: 'json'; v: unknown } | { t: 'text'; v: string } | { t: 'xml'; xml: string; root: string };

/** The output as stored (JSON text), keeping strings and XML values apart from JSON. */
export function encodeBody(output: unknown): string | null {
  if (output === null || output === undefined) return null;
  const stored: StoredBody =
    typeof output === 'string'
      ? { t: 'text', v: output }
      : isXmlValue(output)
        ? { t: 'xml', xml: output.xml, root: output.root }
        : { t: 'json', v: output };
  return JSON.stringify(stored, (_k, v: unknown) => (isXmlValue(v) ? v.xml : typeof v === 'bigint' ? Number(v) : v));
}

export function decodeBody(text: string): unknown {
  const stored = JSON.parse(text) as StoredBody;
  if (stored.t === 'text') return stored.v;
  if (stored.t === 'xml') return new XmlValue(stored.xml, stored.root);
  return stored.v;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Front matter -> the flow-level IR fields, with the front-matter publication checks. */
import {
  IR_VERSION,
  type CorrelationIR,
  type DedupIR,
  type EffectName,
  type FlowIR,
  type LogLevel,
  type QueuePolicyIR,
} from '../ir/types.js';
import { hintFor, type Checker } from './checker.js';
import { EFFECTS } from './compile-step.js';
import { lowerCorrelation, type CorrelationSource } from './correlation-decl.js';
import { FlowErrorCode, FlowWarningCode } from './diagnostics.js';
import type { FlowDoc, KeyEntry } from './parse.js';

export const FRONT_MATTER_KEYS: ReadonlySet<string> = new Set([
  'flowdoc_version',
  'flow',
  'tenant',
  'effects',
  'required_scope',
  'schedule',
  'soap_operation',
  'soap_namespace',
  'queue_max_attempts',
  'queue_initial_delay_ms',
  'queue_backoff_factor',
  'queue_max_delay_ms',
  'max_message_bytes',
  'config',
  'log_level',
  'log_extra_mask_fields',
  'dedup_key',
  'dedup_window_hours',
  'dedup_memoize_response',
  'dedup_on_failure',
  'correlation_open',
  'correlation_state',
  'response_headers',
  'inbound',
  'grpc_method',
  'replay_volatile',
]);

/**
 * A `replay_volatile` path: `status`, `steps`, `outcome`, `attempts`, `headers.<name>`, or `body` or
 * `published.<flow>` followed by `.name`, `['name']`, `[2]` or `[*]` (any item) segments, as replay
 * names the places it compares.
 */
export const REPLAY_PATH =
  /^(?:status|steps|outcome|attempts|headers\.[a-z0-9!#$%&'*+.^_`|~-]+|(?:body|published\.[a-z0-9][a-z0-9_-]*)(?:\.[A-Za-z_$][\w$-]*|\[(?:\d+|\*)\]|\['[^'\\]*'\])*)$/;

/** Defaults of the queue retry policy (spec: Limits). */
export const QUEUE_DEFAULTS: Readonly<QueuePolicyIR> = Object.freeze({
  maxAttempts: 3,
  initialDelayMs: 1000,
  backoffFactor: 2.0,
  maxDelayMs: 60000,
});
/** The log level of a flow that does not set one. */
export const DEFAULT_LOG_LEVEL: LogLevel = 'payload_trimmed';
const LOG_LEVELS: readonly LogLevel[] = ['event_only', 'payload_trimmed', 'full'];
const FM = 'front matter';

export type FlowHead = Omit<FlowIR, 'steps' | 'fault'>;

export function compileFrontMatter(
  doc: FlowDoc,
  chk: Checker,
): { fields: FlowHead; effects: EffectName[]; complete: boolean } {
  const keys = new Map<string, KeyEntry>();
  for (const e of doc.frontMatter ?? []) {
    if (FRONT_MATTER_KEYS.has(e.key)) keys.set(e.key, e);
    else
      chk.error(FlowErrorCode.UNKNOWN_FRONT_MATTER_KEY, e, FM, { key: e.key, hint: hintFor(e.key, FRONT_MATTER_KEYS) });
  }
  const get = (k: string) => keys.get(k);
  let complete = doc.frontMatter !== undefined;
  const required = (k: string): KeyEntry | undefined => {
    const e = get(k);
    if (!e && doc.frontMatter) chk.error(FlowErrorCode.MISSING_KEY, { line: doc.frontMatterLine }, FM, { key: k });
    if (!e) complete = false;
    return e;
  };

  const fv = required('flowdoc_version');
  const flowE = required('flow');
  const tenantE = required('tenant');
  const flowdocVersion = fv ? (chk.text(fv, FM) ?? '') : '';
  const flow = flowE ? chk.name(flowE, FM, 'flow') : undefined;
  const tenant = tenantE ? chk.name(tenantE, FM, 'tenant') : undefined;

  const effects: EffectName[] = [];
  const effectsE = get('effects');
  if (effectsE) {
    for (const n of chk.list(effectsE, FM) ?? []) {
      if (!(EFFECTS as readonly string[]).includes(n))
        chk.error(FlowErrorCode.UNKNOWN_EFFECT, effectsE, FM, { effect: n });
      else if (!effects.includes(n as EffectName)) effects.push(n as EffectName);
    }
  }
  const text = (k: string) => {
    const e = get(k);
    return e ? chk.text(e, FM) : undefined;
  };

  // Spec: "Both or neither. Either alone means no SOAP configuration": published without `soap`, with a warning.
  const soapOp = text('soap_operation');
  const soapNs = text('soap_namespace');
  const opE = get('soap_operation');
  const nsE = get('soap_namespace');
  if ((opE === undefined) !== (nsE === undefined)) {
    const [present, missing] = opE ? ['soap_operation', 'soap_namespace'] : ['soap_namespace', 'soap_operation'];
    chk.warn(FlowWarningCode.SOAP_KEYS_UNPAIRED, (opE ?? nsE)!, FM, { present, missing });
  }

  const queue: QueuePolicyIR = { ...QUEUE_DEFAULTS };
  const queueNum = (k: string, field: keyof QueuePolicyIR, integer: boolean, min: number) => {
    const e = get(k);
    if (!e) return;
    if (typeof e.value !== 'number' || !Number.isFinite(e.value)) {
      chk.error(FlowErrorCode.QUEUE_KEY_NOT_NUMERIC, e, FM, { key: k, value: JSON.stringify(e.value) });
      return;
    }
    if (k === 'queue_backoff_factor' && e.value < 1) {
      chk.error(FlowErrorCode.BACKOFF_FACTOR_BELOW_ONE, e, FM, { value: e.value });
      return;
    }
    if ((integer && !Number.isInteger(e.value)) || e.value < min) {
      chk.error(FlowErrorCode.INVALID_VALUE, e, FM, {
        key: k,
        detail: `must be a whole number of at least ${min}, got ${e.value}`,
      });
      return;
    }
    queue[field] = e.value;
  };
  queueNum('queue_max_attempts', 'maxAttempts', true, 1);
  queueNum('queue_initial_delay_ms', 'initialDelayMs', true, 0);
  queueNum('queue_backoff_factor', 'backoffFactor', false, 1);
  queueNum('queue_max_delay_ms', 'maxDelayMs', true, 0);

  const intKey = (k: string, min: number) => {
    const e = get(k);
    return e ? chk.int(e, FM, min) : undefined;
  };
  const listKey = (k: string) => {
    const e = get(k);
    return e ? (chk.list(e, FM) ?? []) : [];
  };

  let logLevel = DEFAULT_LOG_LEVEL;
  const ll = get('log_level');
  if (ll) {
    if ((LOG_LEVELS as readonly unknown[]).includes(ll.value)) logLevel = ll.value as LogLevel;
    else
      chk.error(FlowErrorCode.INVALID_VALUE, ll, FM, {
        key: 'log_level',
        detail: `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(ll.value)}`,
      });
  }

  let dedup: DedupIR | undefined;
  const dk = get('dedup_key');
  if (dk) {
    const key = chk.expr(dk, FM);
    const wh = get('dedup_window_hours');
    let windowHours: number | undefined;
    if (wh) {
      if (typeof wh.value === 'number' && wh.value > 0) windowHours = wh.value;
      else
        chk.error(FlowErrorCode.INVALID_VALUE, wh, FM, {
          key: 'dedup_window_hours',
          detail: `must be a positive number of hours, got ${JSON.stringify(wh.value)}`,
        });
    }
    const mr = get('dedup_memoize_response');
    const of = get('dedup_on_failure');
    let onFailure: DedupIR['onFailure'] = 'rerun';
    if (of) {
      if (of.value === 'absorb' || of.value === 'rerun') onFailure = of.value;
      else
        chk.error(FlowErrorCode.INVALID_VALUE, of, FM, {
          key: 'dedup_on_failure',
          detail: `must be absorb or rerun, got ${JSON.stringify(of.value)}`,
        });
    }
    dedup = { key: key ?? '', windowHours, memoizeResponse: (mr && chk.bool(mr, FM)) ?? false, onFailure };
  } else {
    for (const k of ['dedup_window_hours', 'dedup_memoize_response', 'dedup_on_failure']) {
      const e = get(k);
      if (e) chk.error(FlowErrorCode.DEDUP_WITHOUT_KEY, e, FM, { key: k });
    }
  }

  let correlation: CorrelationIR | undefined;
  const co = get('correlation_open');
  const cs = get('correlation_state');
  if (co || cs)
    correlation = compileCorrelation(
      { open: co ? asRecord(co.value) : undefined, state: cs ? asRecord(cs.value) : undefined },
      co,
      cs,
      chk,
    );

  let inbound: 'grpc' | undefined;
  const ib = get('inbound');
  if (ib) {
    if (ib.value === 'grpc') inbound = 'grpc';
    else
      chk.error(FlowErrorCode.INVALID_VALUE, ib, FM, {
        key: 'inbound',
        detail: `accepts only grpc, got ${JSON.stringify(ib.value)}`,
      });
  }
  const gm = get('grpc_method');
  if (gm && !inbound) chk.error(FlowErrorCode.GRPC_METHOD_WITHOUT_INBOUND, gm, FM);

  const rv = get('replay_volatile');
  const replayVolatile = rv ? (chk.list(rv, FM) ?? []) : undefined;
  for (const p of replayVolatile ?? [])
    if (!REPLAY_PATH.test(p))
      chk.error(FlowErrorCode.INVALID_VALUE, rv!, FM, {
        key: 'replay_volatile',
        detail: `holds ${JSON.stringify(p)}, which is not a replay path (body.id, body.items[*].at, published.<flow>[*].id, status)`,
      });

  const fields: FlowHead = {
    irVersion: IR_VERSION,
    flowdocVersion,
    tenant: tenant ?? '',
    flow: flow ?? '',
    effects,
    requiredScope: text('required_scope'),
    schedule: text('schedule'),
    soap: soapOp !== undefined && soapNs !== undefined ? { operation: soapOp, namespace: soapNs } : undefined,
    queue,
    maxMessageBytes: intKey('max_message_bytes', 1),
    config: listKey('config'),
    logLevel,
    logExtraMaskFields: listKey('log_extra_mask_fields'),
    dedup,
    correlation,
    responseHeaders: listKey('response_headers').map((h) => h.toLowerCase()),
    inbound,
    grpcMethod: gm ? chk.text(gm, FM) : undefined,
    // Only when declared: the IR (and so the hash) of every other flow stays as it was.
    ...(replayVolatile !== undefined && replayVolatile.length > 0 ? { replayVolatile } : {}),
  };
  return { fields, effects, complete: complete && flow !== undefined && tenant !== undefined };
}

/**
 * Publication checks of a correlation declaration: the shape rules (reported on the key's line) and
 * the CEL syntax of `key` and every `correlation_state` value. Returns the typed IR when the shape is right.
 */
function compileCorrelation(
  c: CorrelationSource,
  co: KeyEntry | undefined,
  cs: KeyEntry | undefined,
  chk: Checker,
): CorrelationIR | undefined {
  const lowered = lowerCorrelation(c);
  for (const p of lowered.problems) {
    const at = (p.key === 'correlation_open' ? co : cs) ?? co ?? cs!;
    if (p.kind === 'name') chk.error(FlowErrorCode.INVALID_NAME, at, FM, { detail: p.message });
    else chk.error(FlowErrorCode.BAD_CORRELATION, at, FM, { detail: p.message });
  }
  const key = c.open?.key;
  if (co && typeof key === 'string' && key.trim() !== '') chk.checkExprAt(key, co, FM, 'correlation_open.key');
  if (cs) {
    for (const [name, expr] of Object.entries(c.state ?? {})) {
      if (typeof expr === 'string') chk.checkExprAt(expr, cs, FM, `correlation_state.${name}`);
    }
  }
  return lowered.ir;
}

/** A correlation declaration is a mapping; a scalar becomes `{key}` (and is then refused for its missing keys). */
function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { key: v };
}

/** One step's syntax node -> StepIR, with every step-level publication check. */
import { checkNtd, detectNtdFormat } from '../expr/ntd.js';
import type { EffectName, HttpEgressIR, OAuth2IR, StepIR, ValidateRuleIR } from '../ir/types.js';
import { Checker, hintFor } from './checker.js';
import { FlowErrorCode } from './diagnostics.js';
import type { FenceNode, KeyEntry, StepNode } from './parse.js';

export const EFFECTS: readonly EffectName[] = ['http_egress', 'queue_publish', 'secret_read'];

/** The five oauth2 token keys and their IR field names. */
export const OAUTH2_KEYS = {
  oauth2_token_url: 'tokenUrl',
  oauth2_client_id: 'clientId',
  oauth2_client_secret: 'clientSecret',
  oauth2_scope: 'scope',
  oauth2_audience: 'audience',
} as const satisfies Record<string, keyof OAuth2IR>;

const HTTP_KEYS = [
  'endpoint',
  'method',
  'headers',
  'read_timeout_ms',
  'connect_timeout_ms',
  'content_type',
  'soap_version',
  'soap_action',
  'soap_operation',
  'max_response_bytes',
  'bearer_token',
  ...Object.keys(OAUTH2_KEYS),
  'tls_client_key',
  'tls_client_cert',
  'tls_ca_cert',
];

/** Every step key (plus `response_header_<name>`). */
export const STEP_KEYS: ReadonlySet<string> = new Set([
  'effects',
  ...HTTP_KEYS,
  'queue',
  'key',
  'response_status',
  'restore_body',
  'snapshot',
  'set_ctx',
  'call_flow',
  'foreach',
  'split',
  'fork',
  'use',
]);

const RESPONSE_HEADER = /^response_header_([a-z0-9_]+)$/i;
/** `ctx.X` written without braces on a credential key (the retired spelling). */
const BARE_CTX = /^\s*ctx(\.[A-Za-z_][\w]*|\[[^\]]*\])+\s*$/;

export interface StepContext {
  chk: Checker;
  /** Effects declared in the front matter; undefined when it is missing or does not parse (that error is said once, not again per step). */
  flowEffects: ReadonlySet<string> | undefined;
  /** Snapshots taken by earlier steps (grows as steps compile). */
  snapshots: Set<string>;
  /** Set when the step was expanded from a library: `<lib>/<step>`. */
  use?: string;
}

export function compileStep(node: StepNode, sc: StepContext): StepIR {
  const { chk } = sc;
  const stepName = node.name;
  const keys = new Map<string, KeyEntry>();
  for (const e of node.keys) {
    if (STEP_KEYS.has(e.key) || RESPONSE_HEADER.test(e.key)) keys.set(e.key, e);
    else chk.error(FlowErrorCode.UNKNOWN_STEP_KEY, e, stepName, { key: e.key, hint: hintFor(e.key, STEP_KEYS) });
  }
  const get = (k: string) => keys.get(k);

  // Effects: declared on the step, plus those its keys imply.
  const effects: EffectName[] = [];
  const effectsEntry = get('effects');
  if (effectsEntry) {
    for (const name of chk.list(effectsEntry, stepName) ?? []) {
      if (!(EFFECTS as readonly string[]).includes(name))
        chk.error(FlowErrorCode.UNKNOWN_EFFECT, effectsEntry, stepName, { effect: name });
      else if (!effects.includes(name as EffectName)) effects.push(name as EffectName);
    }
  }
  const isHttp = HTTP_KEYS.some((k) => keys.has(k));
  if (isHttp && !effects.includes('http_egress')) effects.push('http_egress');
  if (keys.has('queue') && !effects.includes('queue_publish')) effects.push('queue_publish');
  for (const eff of effects) {
    if (sc.flowEffects !== undefined && !sc.flowEffects.has(eff))
      chk.error(FlowErrorCode.EFFECT_NOT_DECLARED, effectsEntry ?? { line: node.line }, stepName, { effect: eff });
  }

  // Field order follows StepIR so the JSON is stable; undefined fields are omitted by JSON.stringify.
  const step: StepIR = {
    name: stepName,
    line: node.line,
    ...(sc.use ? { use: sc.use } : {}),
    effects,
    restoreBody: undefined,
    snapshot: undefined,
    validate: [],
    condition: undefined,
    ntd: undefined,
    http: undefined,
    queue: undefined,
    secretKey: undefined,
    callFlow: undefined,
    foreach: undefined,
    split: undefined,
    fork: undefined,
    responseStatus: undefined,
    responseHeaders: {},
    setCtx: {},
  };

  const restore = get('restore_body');
  if (restore) {
    const n = chk.text(restore, stepName);
    if (n !== undefined && !sc.snapshots.has(n))
      chk.error(FlowErrorCode.UNKNOWN_SNAPSHOT, restore, stepName, { name: n });
    step.restoreBody = n;
  }
  const snap = get('snapshot');
  if (snap) {
    step.snapshot = chk.text(snap, stepName);
    if (step.snapshot !== undefined) sc.snapshots.add(step.snapshot);
  }

  for (const f of node.fences) compileFence(f, step, chk);

  if (isHttp) step.http = compileHttp(keys, node, chk);

  const queue = get('queue');
  if (effects.includes('queue_publish')) {
    if (!queue) chk.error(FlowErrorCode.QUEUE_PUBLISH_WITHOUT_QUEUE, { line: node.line }, stepName);
    else step.queue = chk.name(queue, stepName, 'queue');
  }
  const key = get('key');
  if (effects.includes('secret_read')) {
    step.secretKey = key ? chk.text(key, stepName) : stepName.replace(/[-.]/g, '_');
  }

  const callFlow = get('call_flow');
  if (callFlow) step.callFlow = chk.name(callFlow, stepName, 'call_flow');
  const foreach = get('foreach');
  if (foreach) step.foreach = chk.expr(foreach, stepName);
  const split = get('split');
  if (split) {
    step.split = chk.expr(split, stepName);
    if (!callFlow) chk.error(FlowErrorCode.SPLIT_WITHOUT_CALL_FLOW, split, stepName);
  }
  const fork = get('fork');
  if (fork) {
    const flows = chk.list(fork, stepName);
    if (flows) step.fork = flows.filter((f) => chk.name(fork, stepName, 'fork flow', f) !== undefined);
  }

  const status = get('response_status');
  if (status) step.responseStatus = chk.template(status, stepName);
  for (const [k, e] of keys) {
    const m = RESPONSE_HEADER.exec(k);
    if (!m) continue;
    const t = chk.template(e, stepName);
    if (t !== undefined) step.responseHeaders[m[1]!.toLowerCase().replace(/_/g, '-')] = t;
  }
  const setCtx = get('set_ctx');
  if (setCtx) {
    if (setCtx.value === null || typeof setCtx.value !== 'object' || Array.isArray(setCtx.value)) {
      chk.error(FlowErrorCode.NOT_A_MAPPING, setCtx, stepName, { what: '"set_ctx"' });
    } else {
      for (const [k, v] of Object.entries(setCtx.value as Record<string, unknown>)) {
        const t = chk.template(setCtx, stepName, v, `set_ctx.${k}`);
        if (t !== undefined) step.setCtx[k] = t;
      }
    }
  }
  return step;
}

function compileFence(f: FenceNode, step: StepIR, chk: Checker): void {
  const at = (line: number) => ({ line, file: f.file });
  if (f.kind === 'validate') {
    for (const { text, line } of f.lines) {
      if (text.trim() === '' || text.trim().startsWith('#')) continue;
      const rule = parseRule(text);
      if (!rule) {
        chk.error(FlowErrorCode.VALIDATE_RULE_SHAPE, at(line), step.name, { value: text.trim() });
        continue;
      }
      const col = text.indexOf(rule.expr) + 1;
      if (chk.checkExprAt(rule.expr, at(line), step.name, 'validate', col)) step.validate.push({ ...rule, line });
    }
  } else if (f.kind === 'condition') {
    const src = f.lines
      .map((l) => l.text)
      .join('\n')
      .trim();
    const first = f.lines.find((l) => l.text.trim() !== '')?.line ?? f.line;
    if (chk.checkExprAt(src, at(first), step.name, 'condition')) step.condition = src;
  } else {
    const body = f.lines.map((l) => l.text).join('\n');
    const ntd = { format: detectNtdFormat(body), body };
    const problem = checkNtd(ntd);
    if (problem) {
      // Map the offset back to a line of the fence body.
      const before = body.slice(0, problem.offset);
      const lineIdx = before.split('\n').length - 1;
      const col = problem.offset - (before.lastIndexOf('\n') + 1) + 1;
      chk.error(FlowErrorCode.NTD_SYNTAX, at(f.line + 1 + lineIdx), step.name, { detail: problem.message }, col);
    } else step.ntd = ntd;
  }
}

/** `<expression> | <message> | syntactic|semantic`, split from the right so `||` may appear in the expression. */
export function parseRule(text: string): Omit<ValidateRuleIR, 'line'> | undefined {
  const k = text.lastIndexOf('|');
  if (k < 0) return undefined;
  const m = text.lastIndexOf('|', k - 1);
  if (m < 0) return undefined;
  const expr = text.slice(0, m).trim();
  const message = text.slice(m + 1, k).trim();
  const kind = text.slice(k + 1).trim();
  if (expr === '' || (kind !== 'syntactic' && kind !== 'semantic')) return undefined;
  return { expr, message, kind };
}

function compileHttp(keys: Map<string, KeyEntry>, node: StepNode, chk: Checker): HttpEgressIR {
  const s = node.name;
  const get = (k: string) => keys.get(k);
  const endpointEntry = get('endpoint');
  if (!endpointEntry) chk.error(FlowErrorCode.HTTP_EGRESS_WITHOUT_ENDPOINT, { line: node.line }, s);
  const http: HttpEgressIR = {
    endpoint: (endpointEntry && chk.template(endpointEntry, s)) ?? '',
    method: 'POST',
    headers: {},
  };
  const method = get('method');
  if (method) {
    const m = chk.text(method, s)?.toUpperCase();
    if (m !== undefined && !/^[A-Z]+$/.test(m))
      chk.error(FlowErrorCode.INVALID_VALUE, method, s, {
        key: 'method',
        detail: `must be an HTTP method such as GET or POST, got "${m}"`,
      });
    else if (m) http.method = m;
  }
  const headers = get('headers');
  if (headers) {
    if (headers.value === null || typeof headers.value !== 'object' || Array.isArray(headers.value)) {
      chk.error(FlowErrorCode.NOT_A_MAPPING, headers, s, { what: '"headers"' });
    } else {
      for (const [k, v] of Object.entries(headers.value as Record<string, unknown>)) {
        const t = chk.template(headers, s, typeof v === 'number' ? String(v) : v, `headers.${k}`);
        if (t !== undefined) http.headers[k.toLowerCase()] = t;
      }
    }
  }
  const intKey = (k: string, min: number) => {
    const e = get(k);
    return e ? chk.int(e, s, min) : undefined;
  };
  http.readTimeoutMs = intKey('read_timeout_ms', 1);
  http.connectTimeoutMs = intKey('connect_timeout_ms', 1);
  const ct = get('content_type');
  if (ct) http.contentType = chk.text(ct, s);
  const sv = get('soap_version');
  if (sv) {
    const v = typeof sv.value === 'number' ? sv.value.toFixed(1) : String(sv.value);
    if (v === '1.1' || v === '1.2') http.soapVersion = v;
    else chk.error(FlowErrorCode.BAD_SOAP_VERSION, sv, s, { value: JSON.stringify(sv.value) });
    if (ct) chk.error(FlowErrorCode.CONTENT_TYPE_ON_SOAP_STEP, ct, s);
  }
  const sa = get('soap_action');
  if (sa) http.soapAction = chk.text(sa, s);
  const so = get('soap_operation');
  if (so) http.soapOperation = chk.text(so, s);
  http.maxResponseBytes = intKey('max_response_bytes', 1);

  const credential = (k: string): string | undefined => {
    const e = get(k);
    if (!e) return undefined;
    const t = chk.text(e, s);
    if (t !== undefined && BARE_CTX.test(t)) {
      chk.error(FlowErrorCode.BARE_CTX_CREDENTIAL, e, s, { key: k, value: t.trim() });
      return undefined;
    }
    return t === undefined ? undefined : chk.template(e, s, t);
  };
  http.bearerToken = credential('bearer_token');
  const present = Object.keys(OAUTH2_KEYS).filter((k) => keys.has(k));
  if (present.length > 0) {
    const o: Partial<OAuth2IR> = {};
    for (const [k, field] of Object.entries(OAUTH2_KEYS)) o[field] = credential(k);
    const missing = ['oauth2_token_url', 'oauth2_client_id', 'oauth2_client_secret'].filter((k) => !keys.has(k));
    if (missing.length > 0)
      chk.error(FlowErrorCode.OAUTH2_INCOMPLETE, keys.get(present[0]!)!, s, { missing: missing.join('", "') });
    else http.oauth2 = o as OAuth2IR;
  }
  for (const [k, field] of [
    ['tls_client_key', 'tlsClientKey'],
    ['tls_client_cert', 'tlsClientCert'],
    ['tls_ca_cert', 'tlsCaCert'],
  ] as const) {
    const e = get(k);
    if (e) http[field] = chk.text(e, s);
  }
  return http;
}

/**
 * A compiled flow's front matter, written back in the keys of the `.flow.md` format
 * (docs/flow-language.md): what `svc flows show` prints. Read from the verified artifact, so it is
 * what the flow runs with, defaults filled in, even for a version whose source was not kept.
 */
import type { CorrelationIR, FlowIR } from '../../ir/types.js';

/** Front-matter key -> value, in the order of the format's key table; unset optional keys are left out. */
export type FrontMatterView = Record<string, unknown>;

export function frontMatterOf(ir: FlowIR): FrontMatterView {
  const fm: FrontMatterView = {
    flowdoc_version: ir.flowdocVersion,
    flow: ir.flow,
    tenant: ir.tenant,
    effects: ir.effects,
  };
  set(fm, 'required_scope', ir.requiredScope);
  set(fm, 'schedule', ir.schedule);
  set(fm, 'soap_operation', ir.soap?.operation);
  set(fm, 'soap_namespace', ir.soap?.namespace);
  fm.queue_max_attempts = ir.queue.maxAttempts;
  fm.queue_initial_delay_ms = ir.queue.initialDelayMs;
  fm.queue_backoff_factor = ir.queue.backoffFactor;
  fm.queue_max_delay_ms = ir.queue.maxDelayMs;
  set(fm, 'max_message_bytes', ir.maxMessageBytes);
  if (ir.config.length > 0) fm.config = ir.config;
  fm.log_level = ir.logLevel;
  if (ir.logExtraMaskFields.length > 0) fm.log_extra_mask_fields = ir.logExtraMaskFields;
  if (ir.dedup !== undefined) {
    fm.dedup_key = ir.dedup.key;
    set(fm, 'dedup_window_hours', ir.dedup.windowHours);
    fm.dedup_memoize_response = ir.dedup.memoizeResponse;
    fm.dedup_on_failure = ir.dedup.onFailure;
  }
  if (ir.correlation !== undefined) Object.assign(fm, correlationKeys(ir.correlation));
  if (ir.responseHeaders.length > 0) fm.response_headers = ir.responseHeaders;
  set(fm, 'inbound', ir.inbound);
  set(fm, 'grpc_method', ir.grpcMethod);
  set(fm, 'replay_volatile', ir.replayVolatile);
  return fm;
}

function set(fm: FrontMatterView, key: string, value: unknown): void {
  if (value !== undefined) fm[key] = value;
}

/** `correlation_open` (and `correlation_state`) as written: an opening or a closing declaration. */
function correlationKeys(c: CorrelationIR): FrontMatterView {
  if (c.kind === 'close') return { correlation_open: { closes: c.closes, key: c.key } };
  const open: FrontMatterView = { key: c.key, deadline_secs: c.deadlineSecs };
  set(open, 'on_timeout', c.onTimeout);
  set(open, 'step', c.step);
  return c.state === undefined ? { correlation_open: open } : { correlation_open: open, correlation_state: c.state };
}

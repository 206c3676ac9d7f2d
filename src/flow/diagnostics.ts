/**
 * Publication diagnostics: errors refuse the flow, warnings publish it but say what the author may not
 * expect. One code per condition, one message table per severity, reported through callbacks.
 */

export enum FlowErrorCode {
  FRONT_MATTER_MISSING = 'FRONT_MATTER_MISSING',
  FRONT_MATTER_EMPTY = 'FRONT_MATTER_EMPTY',
  YAML_SYNTAX = 'YAML_SYNTAX',
  NOT_A_MAPPING = 'NOT_A_MAPPING',
  UNKNOWN_FRONT_MATTER_KEY = 'UNKNOWN_FRONT_MATTER_KEY',
  UNKNOWN_STEP_KEY = 'UNKNOWN_STEP_KEY',
  MISSING_KEY = 'MISSING_KEY',
  INVALID_NAME = 'INVALID_NAME',
  INVALID_VALUE = 'INVALID_VALUE',
  QUEUE_KEY_NOT_NUMERIC = 'QUEUE_KEY_NOT_NUMERIC',
  BACKOFF_FACTOR_BELOW_ONE = 'BACKOFF_FACTOR_BELOW_ONE',
  BAD_SOAP_VERSION = 'BAD_SOAP_VERSION',
  CONTENT_TYPE_ON_SOAP_STEP = 'CONTENT_TYPE_ON_SOAP_STEP',
  QUEUE_PUBLISH_WITHOUT_QUEUE = 'QUEUE_PUBLISH_WITHOUT_QUEUE',
  UNKNOWN_EFFECT = 'UNKNOWN_EFFECT',
  EFFECT_NOT_DECLARED = 'EFFECT_NOT_DECLARED',
  HTTP_EGRESS_WITHOUT_ENDPOINT = 'HTTP_EGRESS_WITHOUT_ENDPOINT',
  EXPR_SYNTAX = 'EXPR_SYNTAX',
  TEMPLATE_SYNTAX = 'TEMPLATE_SYNTAX',
  NTD_SYNTAX = 'NTD_SYNTAX',
  VALIDATE_RULE_SHAPE = 'VALIDATE_RULE_SHAPE',
  DUPLICATE_FENCE = 'DUPLICATE_FENCE',
  FENCE_OUTSIDE_STEP = 'FENCE_OUTSIDE_STEP',
  UNCLOSED_FENCE = 'UNCLOSED_FENCE',
  FENCE_NOT_CLOSED_BEFORE = 'FENCE_NOT_CLOSED_BEFORE',
  MULTIPLE_FAULT_SECTIONS = 'MULTIPLE_FAULT_SECTIONS',
  DUPLICATE_STEP = 'DUPLICATE_STEP',
  NO_STEPS = 'NO_STEPS',
  BARE_CTX_CREDENTIAL = 'BARE_CTX_CREDENTIAL',
  OAUTH2_INCOMPLETE = 'OAUTH2_INCOMPLETE',
  SPLIT_WITHOUT_CALL_FLOW = 'SPLIT_WITHOUT_CALL_FLOW',
  UNKNOWN_SNAPSHOT = 'UNKNOWN_SNAPSHOT',
  DEDUP_WITHOUT_KEY = 'DEDUP_WITHOUT_KEY',
  BAD_CORRELATION = 'BAD_CORRELATION',
  GRPC_METHOD_WITHOUT_INBOUND = 'GRPC_METHOD_WITHOUT_INBOUND',
  BAD_USE_REFERENCE = 'BAD_USE_REFERENCE',
  UNKNOWN_LIBRARY = 'UNKNOWN_LIBRARY',
  UNKNOWN_LIBRARY_STEP = 'UNKNOWN_LIBRARY_STEP',
  NESTED_USE = 'NESTED_USE',
}

/** Message templates; `{name}` placeholders are filled from the diagnostic's args. */
export const FLOW_ERROR_MESSAGES: Record<FlowErrorCode, string> = {
  FRONT_MATTER_MISSING: 'the file must start with YAML front matter between two "---" lines',
  FRONT_MATTER_EMPTY:
    'the front matter between the "---" lines 1 and {end} is empty; it needs at least flowdoc_version, flow and tenant',
  YAML_SYNTAX: 'YAML does not parse (column {column}): {detail}',
  NOT_A_MAPPING: '{what} must be a YAML mapping of "key: value" lines',
  UNKNOWN_FRONT_MATTER_KEY: 'unknown front-matter key "{key}"{hint}',
  UNKNOWN_STEP_KEY: 'unknown step key "{key}"{hint}',
  MISSING_KEY: 'the required key "{key}" is missing',
  INVALID_NAME: '{detail}',
  INVALID_VALUE: '"{key}" {detail}',
  QUEUE_KEY_NOT_NUMERIC: '"{key}" must be a number, got {value}',
  BACKOFF_FACTOR_BELOW_ONE: '"queue_backoff_factor" must be at least 1.0, got {value}',
  BAD_SOAP_VERSION: 'soap_version must be 1.1 or 1.2, got {value}',
  CONTENT_TYPE_ON_SOAP_STEP: '"content_type" must not be set on a SOAP step (soap_version sets the content type)',
  QUEUE_PUBLISH_WITHOUT_QUEUE: 'a queue_publish step needs "queue: <flow>" naming a flow of the same tenant',
  UNKNOWN_EFFECT: 'unknown effect "{effect}" (effects are http_egress, queue_publish, secret_read)',
  EFFECT_NOT_DECLARED: 'the step uses the effect "{effect}", which the front matter does not declare in "effects"',
  HTTP_EGRESS_WITHOUT_ENDPOINT: 'an http_egress step needs "endpoint: <url>"',
  EXPR_SYNTAX: 'expression in "{where}" does not parse: {detail}',
  TEMPLATE_SYNTAX: 'template in "{where}" does not parse: {detail}',
  NTD_SYNTAX: 'ntd body does not parse: {detail}',
  VALIDATE_RULE_SHAPE: 'a validate rule is "<expression> | <message> | syntactic|semantic", got "{value}"',
  DUPLICATE_FENCE: 'the step already has a "{fence}" block; write one per step',
  FENCE_OUTSIDE_STEP: 'a "{fence}" block must stand inside a "## Step:" or "## Fault:" section',
  UNCLOSED_FENCE: 'the "{fence}" block opened here is never closed; end it with {marker} on a line of its own',
  FENCE_NOT_CLOSED_BEFORE:
    'the "{fence}" block opened here is not closed before "{what}" on line {at}; end it with {marker} on a line of its own before that line',
  MULTIPLE_FAULT_SECTIONS: 'a flow has at most one "## Fault:" section; the first is on line {first}',
  DUPLICATE_STEP: 'the step name "{name}" is already used on line {first}',
  NO_STEPS: 'the flow has no "## Step:" section',
  BARE_CTX_CREDENTIAL: '"{key}" uses the bare ctx.X spelling, which is no longer read; write "{{ {value} }}"',
  OAUTH2_INCOMPLETE: 'oauth2 needs oauth2_token_url, oauth2_client_id and oauth2_client_secret: "{missing}" is missing',
  SPLIT_WITHOUT_CALL_FLOW: '"split" runs a flow per element and needs "call_flow: <flow>" on the same step',
  UNKNOWN_SNAPSHOT: '"restore_body: {name}" names no snapshot taken by an earlier step (use "snapshot: {name}" there)',
  DEDUP_WITHOUT_KEY: '"{key}" needs "dedup_key" to be set',
  BAD_CORRELATION: '{detail} (see docs/flow-state.md, Correlation)',
  GRPC_METHOD_WITHOUT_INBOUND: '"grpc_method" needs "inbound: grpc"',
  BAD_USE_REFERENCE: '"use" must be "<library>/<step>", got {value}',
  UNKNOWN_LIBRARY: 'no library "{lib}" ({lib}.lib.md) in the --libs directory{hint}',
  UNKNOWN_LIBRARY_STEP: 'library "{lib}" has no step "{step}"',
  NESTED_USE: 'a library step cannot itself "use" another step',
};

/** Conditions that publish the flow and are reported as warnings (validate, compile and deploy alike). */
export enum FlowWarningCode {
  SOAP_KEYS_UNPAIRED = 'SOAP_KEYS_UNPAIRED',
}

/** Warning message templates, filled like the error messages. */
export const FLOW_WARNING_MESSAGES: Record<FlowWarningCode, string> = {
  SOAP_KEYS_UNPAIRED:
    '"{present}" without "{missing}" means no SOAP configuration: the flow is published without a WSDL; add "{missing}" or remove "{present}"',
};

/**
 * Which checks `svc validate` runs: it parses and resolves names, but does not check step
 * configuration (compile and deploy run every check).
 */
export const CONFIG_CHECKS: ReadonlySet<FlowErrorCode> = new Set([
  FlowErrorCode.QUEUE_KEY_NOT_NUMERIC,
  FlowErrorCode.BACKOFF_FACTOR_BELOW_ONE,
  FlowErrorCode.CONTENT_TYPE_ON_SOAP_STEP,
  FlowErrorCode.QUEUE_PUBLISH_WITHOUT_QUEUE,
  FlowErrorCode.EFFECT_NOT_DECLARED,
  FlowErrorCode.HTTP_EGRESS_WITHOUT_ENDPOINT,
  FlowErrorCode.BARE_CTX_CREDENTIAL,
  FlowErrorCode.OAUTH2_INCOMPLETE,
  FlowErrorCode.SPLIT_WITHOUT_CALL_FLOW,
  FlowErrorCode.DEDUP_WITHOUT_KEY,
  FlowErrorCode.BAD_CORRELATION,
  FlowErrorCode.GRPC_METHOD_WITHOUT_INBOUND,
  FlowErrorCode.INVALID_VALUE,
]);

/** Where a diagnostic points and what it says. */
interface Located {
  message: string;
  file: string;
  /** 1-based line in `file`. */
  line: number;
  /** 1-based column; 1 when only the line is known. */
  column: number;
  /** The step (or `front matter`, or the fault section's name) the problem is in. */
  step: string;
}

/** A publication error: the flow is refused. */
export interface FlowDiagnostic extends Located {
  code: FlowErrorCode;
}

/** A publication warning: the flow is published all the same. */
export interface FlowWarning extends Located {
  code: FlowWarningCode;
}

export type OnError = (d: FlowDiagnostic) => void;
export type OnWarning = (w: FlowWarning) => void;

type Args = Record<string, string | number>;
const fill = (template: string, args: Args): string =>
  template.replace(/\{(\w+)\}/g, (m, k: string) => (k in args ? String(args[k]) : m));

export function formatMessage(code: FlowErrorCode, args: Args = {}): string {
  return fill(FLOW_ERROR_MESSAGES[code], args);
}

export function formatWarningMessage(code: FlowWarningCode, args: Args = {}): string {
  return fill(FLOW_WARNING_MESSAGES[code], args);
}

/** `file:line: step: message`, the form validate, compile and deploy print. */
export function formatDiagnostic(d: FlowDiagnostic): string {
  return `${d.file}:${d.line}: ${d.step}: ${d.message}`;
}

/** `file:line: warning: step: message`, the form validate, compile and deploy print on stderr. */
export function formatWarning(w: FlowWarning): string {
  return `${w.file}:${w.line}: warning: ${w.step}: ${w.message}`;
}

/** Thrown by callers that want an exception instead of a list (e.g. deploy), carrying every diagnostic. */
export class FlowPublicationError extends Error {
  constructor(
    readonly diagnostics: FlowDiagnostic[],
    /** Warnings found beside the errors, so a refusal can show them too. */
    readonly warnings: FlowWarning[] = [],
  ) {
    super(diagnostics.map(formatDiagnostic).join('\n'));
    this.name = 'FlowPublicationError';
  }
}

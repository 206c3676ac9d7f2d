/**
 * The compiled flow (IR): the contract between the compiler (flow/) and everything that runs a flow.
 * The compiler emits it as JSON with a stable key order; its SHA-256 is the artifact's address.
 *
 * Expressions are CEL source text (`Expr`), templates are strings holding `{{ expr }}` holes
 * (`Template`); both are checked at compile time and compiled (and cached) by expr/ at run time.
 */

/**
 * 2: `correlation` is the typed `CorrelationIR` below. Version 1 carried the front-matter mappings
 * verbatim (`{open?, state?}`); src/flow/stored-ir.ts converts such artifacts on load.
 */
export const IR_VERSION = 2;

/** CEL source, evaluated with `ctx` as the only variable. */
export type Expr = string;
/** Text with `{{ <CEL> }}` holes; exactly one hole keeps the expression's type. */
export type Template = string;

export type EffectName = 'http_egress' | 'queue_publish' | 'secret_read';
export type LogLevel = 'event_only' | 'payload_trimmed' | 'full';

export interface QueuePolicyIR {
  maxAttempts: number; // total delivery attempts, default 3
  initialDelayMs: number; // delay before the second attempt, default 1000
  backoffFactor: number; // >= 1.0, default 2.0
  maxDelayMs: number; // cap on a single delay, default 60000
}

export interface DedupIR {
  key: Expr;
  /** Absent: the installation default (`dedup_window_hours` setting). */
  windowHours?: number;
  memoizeResponse: boolean;
  onFailure: 'absorb' | 'rerun';
}

/** `correlation_open` (+ `correlation_state`), checked at publication (docs/flow-state.md, Correlation). */
export type CorrelationIR = CorrelationOpenIR | CorrelationCloseIR;

/** An opening flow: records a row for the key with a deadline. */
export interface CorrelationOpenIR {
  kind: 'open';
  /** The business key, over the request. */
  key: Expr;
  /** Whole seconds, at least 1. */
  deadlineSecs: number;
  /** Flow of the same tenant enqueued with the recorded state on timeout. */
  onTimeout?: string;
  /** The step recorded in the row; absent: the flow's last step. */
  step?: string;
  /** `correlation_state`: name -> expression, evaluated at open and stored. */
  state?: Record<string, Expr>;
}

/** A closing flow: closes the row the opening flow `closes` recorded for the key. */
export interface CorrelationCloseIR {
  kind: 'close';
  key: Expr;
  /** The opening flow, same tenant. */
  closes: string;
}

export interface ValidateRuleIR {
  expr: Expr;
  message: string;
  kind: 'syntactic' | 'semantic';
  line: number;
}

export interface NtdIR {
  /** Decided by the first non-blank character: `{`/`[` JSON, `<` XML, else text. */
  format: 'json' | 'xml' | 'text';
  body: Template;
}

export interface OAuth2IR {
  tokenUrl: Template;
  clientId: Template;
  clientSecret: Template;
  scope?: Template;
  audience?: Template;
}

export interface HttpEgressIR {
  endpoint: Template; // may hold ${VAR} (process env at run time) or {{ }} holes
  method: string; // default POST
  headers: Record<string, Template>;
  readTimeoutMs?: number;
  connectTimeoutMs?: number;
  contentType?: string;
  soapVersion?: '1.1' | '1.2';
  soapAction?: string;
  soapOperation?: string;
  /** Per-step override of the response size ceiling. */
  maxResponseBytes?: number;
  bearerToken?: Template;
  oauth2?: OAuth2IR;
  tlsClientKey?: string;
  tlsClientCert?: string;
  tlsCaCert?: string;
}

export interface StepIR {
  name: string;
  line: number;
  /** Set when the step was expanded from a library at compile time: `<library>/<step>`. */
  use?: string;
  effects: EffectName[];
  /** Name of a snapshot taken by an earlier step, restored into the input first. */
  restoreBody?: string;
  /** Saves this step's input under a name for a later `restore_body`. */
  snapshot?: string;
  validate: ValidateRuleIR[];
  condition?: Expr;
  ntd?: NtdIR;
  http?: HttpEgressIR;
  /** queue_publish: target flow in the same tenant. */
  queue?: string;
  /** secret_read: key read from SVC_SECRET_<KEY uppercased> into ctx.<key>. */
  secretKey?: string;
  callFlow?: string;
  foreach?: Expr;
  split?: Expr;
  fork?: string[];
  responseStatus?: Template;
  /** Lowercase header name (from `response_header_<name>`, `_` -> `-`) to template. */
  responseHeaders: Record<string, Template>;
  setCtx: Record<string, Template>;
}

export interface FaultIR {
  name: string;
  line: number;
  steps: StepIR[];
}

export interface FlowIR {
  irVersion: typeof IR_VERSION;
  flowdocVersion: string;
  tenant: string;
  flow: string;
  effects: EffectName[];
  requiredScope?: string;
  schedule?: string;
  soap?: { operation: string; namespace: string };
  queue: QueuePolicyIR;
  maxMessageBytes?: number;
  config: string[];
  logLevel: LogLevel;
  logExtraMaskFields: string[];
  dedup?: DedupIR;
  correlation?: CorrelationIR;
  /** Backend response header names passed back to the caller. */
  responseHeaders: string[];
  inbound?: 'grpc';
  grpcMethod?: string;
  /**
   * Paths of what a delivery answers or publishes whose value changes on every run (a generated id,
   * `now()`): `svc replay --ignore-volatile` does not count their differences. Absent when none.
   */
  replayVolatile?: string[];
  steps: StepIR[];
  fault?: FaultIR;
}

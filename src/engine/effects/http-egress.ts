/**
 * The http_egress effect: renders the step's endpoint and headers, sends the message (plain or in a
 * SOAP envelope) through a pooled keep-alive undici Agent, enforces timeouts and the response size
 * ceiling while streaming, adds bearer / OAuth2 credentials and TLS client material, and turns the
 * response into the next step's input. Every failure is a typed error naming the step.
 */
import type { Dispatcher } from 'undici';
import { EgressError, EgressTooLargeError, StepConfigError, type EgressErrorDetails } from '../../common/errors.js';
import { readEnvelope, soapContentType, wrapMessage } from '../../common/soap-envelope.js';
import { xmlToJson } from '../../common/xml.js';
import type { HttpEgressIR, StepIR } from '../../ir/types.js';
import { detachedSpan, type TraceSpan } from '../../common/trace-context/spans.js';
import { AgentPool, TlsMaterialError } from './egress-agents.js';
import { loadUndici, type Undici } from './undici-module.js';
import {
  decodeResponse,
  DecodeProblem,
  encodeMessage,
  flattenHeaders,
  readLimited,
  ResponseTooLarge,
} from './egress-codec.js';
import { OAuth2TokenCache, OAuth2TokenError, type OAuth2Request } from './oauth2-token-cache.js';

export interface HttpEgressDeps {
  /** Platform `max_message_bytes`, read on every call. @default () => 1048576 */
  readonly platformMaxMessageBytes?: () => number;
  /** Environment for `${VAR}` in endpoints, read on every call. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Read timeout when the step sets none, ms. @default 30000 */
  readonly defaultReadTimeoutMs?: number;
  /** Connect timeout when the step sets none, ms. @default 10000 */
  readonly defaultConnectTimeoutMs?: number;
  readonly agents?: AgentPool;
  readonly tokens?: OAuth2TokenCache;
  /**
   * Called after every call, successful or not (for `egress_traced`): body is null when empty or
   * abandoned; a call that got no response (refused, timed out) has no status and says why in `error`.
   */
  readonly onExchange?: (record: EgressExchange) => void;
  /**
   * Where a step's calls go instead of a pooled agent: `svc test` answers them from an example's
   * stubs (and the step's TLS files are not read). @default the pool's agent for the step
   */
  readonly dispatcherFor?: (step: StepIR) => Dispatcher;
}

export interface EgressExchange {
  readonly step: string;
  /** The backend's status; undefined when no response arrived. */
  readonly status: number | undefined;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  /** Why the call got no response (a transport failure), for the row's reason. */
  readonly error?: string;
}

/** Per-call limits the engine resolves from the flow, and the call's place in the trace. */
export interface EgressCallOptions {
  /** The flow's `max_message_bytes`, when it declares one. */
  readonly flowMaxMessageBytes?: number;
  /**
   * The step's span and the flow it runs in: the call gets a client span of its own, a child of
   * `span`, sent to the backend as `traceparent` (and `tracestate`). @default a new trace
   */
  readonly trace?: { readonly span: TraceSpan; readonly tenant: string; readonly flow: string };
}

export interface EgressResult {
  readonly output: unknown;
  readonly status: number;
  readonly headers: Record<string, string>;
}

export type HttpEgressHandler = ((
  step: StepIR,
  message: unknown,
  ctx: Record<string, unknown>,
  render: (template: string) => unknown,
  call?: EgressCallOptions,
) => Promise<EgressResult>) & { close(): Promise<void> };

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Substitutes `${VAR}` from `env`; an unset variable fails the step naming it. */
export function substituteEnv(step: string, endpoint: string, env: NodeJS.ProcessEnv): string {
  return endpoint.replace(ENV_REF, (_m, name: string) => {
    const value = env[name];
    if (value === undefined)
      throw new StepConfigError(
        step,
        `step '${step}': endpoint uses \${${name}} but the environment variable ${name} is not set`,
      );
    return value;
  });
}

function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function renderEndpoint(step: string, http: HttpEgressIR, env: NodeJS.ProcessEnv, render: (t: string) => unknown): URL {
  let endpoint = substituteEnv(step, http.endpoint, env);
  if (http.endpoint.includes('{{')) endpoint = asText(render(endpoint));
  try {
    const url = new URL(endpoint);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    return url;
  } catch {
    throw new StepConfigError(step, `step '${step}': endpoint '${endpoint}' is not an absolute http(s) URL`);
  }
}

/** The response ceiling for this call: step override, else flow override, else platform setting. */
export function responseCeiling(http: HttpEgressIR, call: EgressCallOptions | undefined, platform: number): number {
  return http.maxResponseBytes ?? call?.flowMaxMessageBytes ?? platform;
}

function describeTransportError(
  undiciErrors: Undici['errors'],
  err: unknown,
  readTimeoutMs: number,
  connectTimeoutMs: number,
): string {
  if (err instanceof undiciErrors.ConnectTimeoutError) return `could not connect within ${connectTimeoutMs} ms`;
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
    return `backend did not answer within the ${readTimeoutMs} ms read timeout`;
  }
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e.code ?? e.cause?.code;
  return `request failed: ${code !== undefined ? `${code} ` : ''}${e.message}`;
}

/** True for the transport errors of a call that got no (whole) answer in time. */
function isTimeout(undiciErrors: Undici['errors'], err: unknown): boolean {
  return (
    err instanceof undiciErrors.ConnectTimeoutError ||
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError
  );
}

export function createHttpEgress(deps: HttpEgressDeps = {}): HttpEgressHandler {
  const agents = deps.agents ?? new AgentPool();
  const tokens = deps.tokens ?? new OAuth2TokenCache();
  const platformMax = deps.platformMaxMessageBytes ?? (() => 1_048_576);
  const readDefault = deps.defaultReadTimeoutMs ?? 30_000;
  const connectDefault = deps.defaultConnectTimeoutMs ?? 10_000;

  const handler = async (
    step: StepIR,
    message: unknown,
    ctx: Record<string, unknown>,
    render: (template: string) => unknown,
    call?: EgressCallOptions,
  ): Promise<EgressResult> => {
    const parent = call?.trace;
    const method = (step.http?.method || 'POST').toUpperCase();
    // Named by the HTTP client convention (the method); the span covers the token request too.
    const span = (parent?.span ?? detachedSpan()).child(method, 'client', {
      'svc.tenant': parent?.tenant,
      'svc.flow': parent?.flow,
      'svc.step': step.name,
      'http.request.method': method,
    });
    try {
      const result = await exchange(step, message, ctx, render, call, span);
      span.end();
      return result;
    } catch (err) {
      span.end(err);
      throw err;
    }
  };

  const exchange = async (
    step: StepIR,
    message: unknown,
    ctx: Record<string, unknown>,
    render: (template: string) => unknown,
    call: EgressCallOptions | undefined,
    span: TraceSpan,
  ): Promise<EgressResult> => {
    const http = step.http;
    const name = step.name;
    if (http === undefined) throw new StepConfigError(name, `step '${name}': http_egress needs an endpoint`);
    const env = deps.env ?? process.env;
    const url = renderEndpoint(name, http, env, render);
    const method = (http.method || 'POST').toUpperCase();
    if (span.sdk) describeTarget(span, url);
    const readTimeoutMs = http.readTimeoutMs ?? readDefault;
    const connectTimeoutMs = http.connectTimeoutMs ?? connectDefault;
    const limit = responseCeiling(http, call, platformMax());
    const fail = (msg: string, extra: Omit<EgressErrorDetails, 'step'> = {}, cause?: unknown) =>
      new EgressError(name, `step '${name}': ${msg}`, cause, { step: name, ...extra });

    let agent: Dispatcher;
    try {
      agent =
        deps.dispatcherFor?.(step) ??
        (await agents.agentFor(connectTimeoutMs, {
          keyPath: http.tlsClientKey,
          certPath: http.tlsClientCert,
          caPath: http.tlsCaCert,
        }));
    } catch (err) {
      if (err instanceof TlsMaterialError) throw new StepConfigError(name, `step '${name}': ${err.message}`);
      throw err;
    }

    // Headers: the step's templates first, then what the call itself decides (body type, SOAP, auth).
    const headers: Record<string, string> = {};
    for (const [h, template] of Object.entries(http.headers)) {
      const value = render(template);
      if (value !== null && value !== undefined) headers[h.toLowerCase()] = asText(value);
    }
    // The call's own trace context, whatever the step's templates said: the backend's span is a
    // child of this call's, in the execution's trace.
    headers.traceparent = span.traceparent();
    if (span.tracestate !== undefined) headers.tracestate = span.tracestate;
    else delete headers.tracestate;
    let body: string | undefined;
    if (http.soapVersion !== undefined) {
      const action = http.soapAction ?? http.soapOperation;
      body = wrapMessage(http.soapVersion, message);
      headers['content-type'] = soapContentType(http.soapVersion, action);
      if (http.soapVersion === '1.1') headers.soapaction = `"${action ?? ''}"`;
    } else if (method !== 'GET' && method !== 'HEAD') {
      const encoded = encodeMessage(message, http.contentType);
      body = encoded.body;
      if (encoded.contentType !== undefined && headers['content-type'] === undefined)
        headers['content-type'] = encoded.contentType;
    }

    let oauth: OAuth2Request | undefined;
    if (http.oauth2 !== undefined) {
      const o = http.oauth2;
      oauth = {
        tokenUrl: asText(render(substituteEnv(name, o.tokenUrl, env))),
        clientId: asText(render(o.clientId)),
        clientSecret: asText(render(o.clientSecret)),
        scope: o.scope === undefined ? undefined : asText(render(o.scope)),
        audience: o.audience === undefined ? undefined : asText(render(o.audience)),
      };
      try {
        headers.authorization = `Bearer ${await tokens.get(oauth, agent)}`;
      } catch (err) {
        if (err instanceof OAuth2TokenError) throw fail(err.message, {}, err);
        throw err;
      }
    } else if (http.bearerToken !== undefined) {
      const token = asText(render(http.bearerToken));
      if (token !== '') headers.authorization = `Bearer ${token}`;
    }

    const { request, errors } = await loadUndici();
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        dispatcher: agent,
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        headersTimeout: readTimeoutMs,
        bodyTimeout: readTimeoutMs,
      });
    } catch (err) {
      const why = describeTransportError(errors, err, readTimeoutMs, connectTimeoutMs);
      deps.onExchange?.({ step: name, status: undefined, headers: {}, body: null, error: why });
      throw fail(why, { timedOut: isTimeout(errors, err) }, err);
    }
    const status = res.statusCode;
    span.setAttribute('http.response.status_code', status);
    const resHeaders = flattenHeaders(res.headers);
    let bytes: Buffer;
    try {
      bytes = await readLimited(res, limit);
    } catch (err) {
      deps.onExchange?.({ step: name, status, headers: resHeaders, body: null });
      if (err instanceof ResponseTooLarge) throw new EgressTooLargeError(name, limit);
      throw fail(
        describeTransportError(errors, err, readTimeoutMs, connectTimeoutMs),
        { upstreamStatus: status, timedOut: isTimeout(errors, err) },
        err,
      );
    }
    if (status === 401 && oauth !== undefined) tokens.invalidate(oauth);
    const ok = status >= 200 && status <= 299;
    const upstream = { upstreamStatus: status, upstreamHeaders: resHeaders };

    if (http.soapVersion !== undefined) {
      const text = bytes.toString('utf8');
      const looksXml = /^\uFEFF?\s*</.test(text);
      let envelope: ReturnType<typeof readEnvelope> | undefined;
      if (looksXml) {
        try {
          envelope = readEnvelope(text, { maxBytes: limit });
        } catch (err) {
          deps.onExchange?.({ step: name, status, headers: resHeaders, body: tracedEnvelope(text) });
          if (ok) throw fail(`backend answered an unusable SOAP envelope: ${(err as Error).message}`, upstream, err);
        }
      }
      deps.onExchange?.({ step: name, status, headers: resHeaders, body: tracedEnvelope(text) });
      if (envelope?.fault !== undefined) {
        // The fault handler and the door read these (spec: ctx.soap_fault_code / ctx.soap_fault_string).
        ctx.soap_fault_code = envelope.fault.code;
        ctx.soap_fault_string = envelope.fault.string;
        throw fail(`backend answered SOAP Fault ${envelope.fault.code}: ${envelope.fault.string}`, {
          ...upstream,
          faultCode: envelope.fault.code,
          faultString: envelope.fault.string,
        });
      }
      if (!ok) throw fail(`backend answered HTTP ${status}`, upstream);
      if (envelope === undefined) throw fail('backend answered a non-SOAP response', upstream);
      return { output: envelope.body, status, headers: resHeaders };
    }

    let output: unknown;
    try {
      output = decodeResponse(bytes, resHeaders['content-type'], limit);
    } catch (err) {
      deps.onExchange?.({ step: name, status, headers: resHeaders, body: bytes.toString('utf8') });
      if (!ok) throw fail(`backend answered HTTP ${status}`, upstream);
      if (err instanceof DecodeProblem) throw fail(err.message, upstream, err);
      throw err;
    }
    deps.onExchange?.({ step: name, status, headers: resHeaders, body: output });
    if (!ok) throw fail(`backend answered HTTP ${status}`, upstream);
    return { output, status, headers: resHeaders };
  };
  return Object.assign(handler, { close: () => agents.close() });
}

/** The call's target on its span (OpenTelemetry HTTP client conventions); the query and any credentials in the URL are left out. */
function describeTarget(span: TraceSpan, url: URL): void {
  span.setAttribute('url.full', `${url.origin}${url.pathname}`);
  span.setAttribute('server.address', url.hostname);
  span.setAttribute('server.port', url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port));
}

/**
 * The SOAP envelope a backend answered, as the trace records it: flattened to JSON (Header and Body,
 * element names as keys), so the flow's mask applies to its fields; the text as it came when it is
 * not XML that can be read (an HTML error page, say); null when empty.
 */
function tracedEnvelope(text: string): unknown {
  if (text === '') return null;
  try {
    return xmlToJson(text);
  } catch {
    return /^\uFEFF?\s*</.test(text) ? { _unrepresentable: 'unreadable XML' } : text;
  }
}

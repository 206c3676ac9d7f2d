/**
 * The reusable parts of the OpenAPI document: body schemas, parameters, headers and the answers
 * several routes share. Names and limits come from the code that enforces them where it exports them.
 */
import { FIRST_CORRELATION_HEADER, REPLAY_HEADER } from '../../../app/runtime/dedup.js';
import { JSON_MAX_DEPTH } from '../../../common/json-depth.js';
import { NAME_MAX_BYTES, NAME_PATTERN } from '../../../common/names.js';
import { SOAP_WARNING_HEADER, SOAP_WARNING_NON_XML } from '../../soap/response.js';
import { PAYLOAD_TOO_LARGE } from '../body.js';
import { errorAnswer, errorBody } from './responses.js';
import type { Content, HeaderObject, JsonSchema, OpenApiDocument, ParameterObject, ReferenceObject } from './types.js';

/** A JSON pointer into `components`. */
export function ref(kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): ReferenceObject {
  return { $ref: `#/components/${kind}/${name}` };
}

/** Error texts that are fixed strings on the wire (the ones with variable parts are patterns below). */
export const Messages = {
  unauthorized: 'unauthorized',
  signatureMismatch: 'signature mismatch',
  insufficientScope: 'forbidden: insufficient scope',
  notPermitted: 'forbidden: flow not permitted for this key',
  rateLimited: 'rate limit exceeded',
  gateUnavailable: 'authorization temporarily unavailable',
  busy: 'server busy: too many flow executions in flight',
  shuttingDown: 'server is shutting down',
  stateUnavailable: 'state unavailable: the flow state store could not be read or written',
  registryUnavailable: 'registry unavailable: the flow registry could not be read',
  internal: 'internal error',
  flowFailed: 'flow execution failed',
  faultHandlerFailed: 'fault handler failed',
  duplicateInFlight: 'duplicate delivery: the first delivery with this dedup_key is still in flight; retry later',
  correlationOpen: 'a correlation is already open for this key',
} as const;

/** A SOAP Fault envelope, by version: the SOAP door's own content types. */
export const SOAP_11 = 'text/xml; charset=utf-8';
export const SOAP_12 = 'application/soap+xml; charset=utf-8';
export const soapFaults = (...versions: ('1.1' | '1.2')[]): Content =>
  Object.fromEntries(
    versions.map((v) => [
      v === '1.1' ? SOAP_11 : SOAP_12,
      { schema: ref('schemas', v === '1.1' ? 'SoapEnvelope11' : 'SoapEnvelope12') },
    ]),
  );

const nameSchema: JsonSchema = {
  type: 'string',
  pattern: NAME_PATTERN.source,
  minLength: 1,
  maxLength: NAME_MAX_BYTES,
  description: `The name rule: lowercase letters, digits, "-" and "_", starting with a letter or digit, 1 to ${NAME_MAX_BYTES} bytes. A component breaking it answers 400 \`invalid flow identifier\` before any lookup and before the key is looked at.`,
};

const pathName = (name: string, description: string): ParameterObject => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: nameSchema,
});

const header = (description: string, schema: JsonSchema, required = false): HeaderObject =>
  required ? { description, required, schema } : { description, schema };

/** What `error` says when no flow answers under the name (or its tenant is unregistered or disabled). */
export const FLOW_NOT_FOUND: JsonSchema = { type: 'string', pattern: "^flow '[^']+/[^']+' not found$" };

export const components: OpenApiDocument['components'] = {
  schemas: {
    AnyJson: { description: 'Any JSON value (object, array, string, number, boolean or null).' },
    Error: errorBody({
      type: 'string',
      description: 'What went wrong, for the caller (internals never appear: those read `internal error`).',
    }),
    ValidationRejected: {
      type: 'object',
      description:
        'A `validate` rule of the flow was false: 400 for a `syntactic` rule, 422 for a `semantic` one. No `ok` field.',
      required: ['error', 'step'],
      properties: {
        error: { type: 'string', description: "The rule's message." },
        step: { type: 'string', description: 'The step holding the rule.' },
      },
      additionalProperties: false,
    },
    FlowTimeExceeded: {
      type: 'object',
      description: 'The run passed `flow_max_duration_secs` (checked between steps). No `ok` field.',
      required: ['error', 'step', 'limit_secs'],
      properties: {
        error: { const: 'flow exceeded its maximum duration' },
        step: { type: 'string' },
        limit_secs: { type: 'number', minimum: 1 },
      },
      additionalProperties: false,
    },
    Health: { type: 'object', required: ['ok'], properties: { ok: { const: true } }, additionalProperties: false },
    FlowMetadata: {
      type: 'object',
      description: 'The latest artifact of the flow.',
      required: ['tenant', 'name', 'version', 'hash', 'created_at'],
      properties: {
        tenant: { type: 'string' },
        name: { type: 'string' },
        version: { type: 'string', description: 'The deploy label (text, e.g. `1.0.0`).' },
        hash: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the artifact.' },
        created_at: { type: 'string', format: 'date-time', description: 'ISO 8601 UTC.' },
      },
      additionalProperties: false,
    },
    EnqueueAccepted: {
      type: 'object',
      description:
        'The message is durably written (appended and synced). The flow has not run: its result is never reported here.',
      required: ['queued', 'offset', 'tenant', 'flow'],
      properties: {
        queued: { const: true },
        offset: {
          type: 'integer',
          minimum: 0,
          description:
            "The message's byte position in the queue's log: not a handle (offsets start again after a drain).",
        },
        tenant: { type: 'string' },
        flow: { type: 'string' },
      },
      additionalProperties: false,
    },
    ConnectorEvent: {
      type: 'object',
      description: 'Read as JSON whatever the `Content-Type` says; other fields are ignored, null counts as absent.',
      required: ['event_type'],
      properties: {
        event_type: {
          enum: ['connector_received', 'connector_oversized'],
          description: "Recorded as the log row's `event`.",
        },
        correlation_id: { type: ['string', 'null'], description: 'Generated when absent.' },
        message_id: { type: ['string', 'null'], description: "The connector's own id; recorded in the payload." },
        worker_id: { type: ['number', 'null'], description: 'Recorded only beside a `message_id`.' },
        body_bytes: { type: ['number', 'null'], description: 'Recorded only beside a `message_id`.' },
      },
    },
    XmlDocument: {
      type: 'string',
      description: 'An XML document (no DOCTYPE or entity definitions, at most 64 levels deep).',
    },
    SoapEnvelope11: {
      type: 'string',
      description: 'A SOAP 1.1 envelope (`http://schemas.xmlsoap.org/soap/envelope/`).',
    },
    SoapEnvelope12: { type: 'string', description: 'A SOAP 1.2 envelope (`http://www.w3.org/2003/05/soap-envelope`).' },
    OpenApiDocument: { type: 'object', required: ['openapi', 'info', 'paths'], description: 'This document.' },
  },
  parameters: {
    Tenant: pathName('tenant', 'The tenant.'),
    FlowName: pathName(
      'name',
      'The flow; its `latest` version is resolved at call time (a new deploy takes effect on the next request).',
    ),
    ConnectorFlow: pathName('flow', 'The flow the event is about (it need not be deployed).'),
    CorrelationId: {
      name: 'X-Correlation-ID',
      in: 'header',
      description:
        'The correlation id of the delivery (`ctx.correlation_id`, the log rows); the first value when repeated. Absent: `X-Request-ID`, else a generated UUID v4. Not echoed unless the flow sets `response_header_x_correlation_id`.',
      schema: { type: 'string' },
    },
    RequestId: {
      name: 'X-Request-ID',
      in: 'header',
      description: 'The correlation id when `X-Correlation-ID` is absent.',
      schema: { type: 'string' },
    },
    Signature: {
      name: 'X-Svc-Signature',
      in: 'header',
      description:
        "Hex HMAC-SHA256 of the raw body keyed with the server's secret. Required when the server runs with `--secret` (missing or wrong: 401 `signature mismatch`, checked after the key and before the body is parsed); ignored otherwise.",
      schema: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
    },
    SoapAction: {
      name: 'SOAPAction',
      in: 'header',
      description:
        'With `Content-Type: text/xml`, marks the request as SOAP 1.1 (`ctx.soap_action`). Without it, an `Envelope` element in the first 512 bytes does.',
      schema: { type: 'string' },
    },
    ForwardedProto: {
      name: 'X-Forwarded-Proto',
      in: 'header',
      description:
        "The scheme of the WSDL's port address when a proxy ends TLS in front of the service (`http` or `https`; the first of a list).",
      schema: { type: 'string' },
    },
    IfNoneMatch: {
      name: 'If-None-Match',
      in: 'header',
      description: 'An `ETag` of this document: 304 when it still matches.',
      schema: { type: 'string' },
    },
  },
  headers: {
    WwwAuthenticate: header('`Bearer`, only when the request had no `Authorization` header.', { const: 'Bearer' }),
    RateLimitLimit: header(
      "The key's rate, in requests per second.",
      { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$' },
      true,
    ),
    RateLimitRemaining: header('Tokens left: `0` on a refusal.', { const: '0' }, true),
    RateLimitReset: header(
      'Unix seconds at which the bucket is full again.',
      { type: 'string', pattern: '^[0-9]+$' },
      true,
    ),
    RetryAfterRateLimited: header(
      'Whole seconds until one token is available (at least 1).',
      { type: 'string', pattern: '^[1-9][0-9]*$' },
      true,
    ),
    RetryAfterBusy: header(
      'On `server busy` only (every execution slot taken; nothing started, safe to retry): whole seconds to wait.',
      { type: 'string', pattern: '^[1-9][0-9]*$' },
    ),
    IdempotentReplay: header(
      '`true` on a replayed answer: a duplicate delivery of a `dedup_key` that already completed; the flow did not run again (`docs/flow-state.md`).',
      { const: 'true' },
    ),
    FirstCorrelationId: header(
      'On a replay and on a 409 duplicate: the correlation id of the first delivery of the `dedup_key`.',
      { type: 'string' },
    ),
    SoapWarning: header(
      `\`${SOAP_WARNING_NON_XML}\` when a SOAP request's flow answered a value that is not XML (placed as text in the envelope).`,
      { const: SOAP_WARNING_NON_XML },
    ),
    ConnectionClose: header(
      'The connection is closed after the answer: the rest of the body is not read.',
      { const: 'close' },
      true,
    ),
    ETag: header(
      'The identity of this document (it changes with the service version).',
      { type: 'string', pattern: '^"[0-9a-f]+"$' },
      true,
    ),
    CacheControl: header('How long a client may keep the document without asking again.', { type: 'string' }, true),
  },
  responses: {
    Forbidden: errorAnswer(
      "The key lacks the flow's `required_scope` (scopes match exactly or `*`), or the flow is outside the key's allowlist. Both apply when both are set.",
      [Messages.insufficientScope, Messages.notPermitted],
    ),
    FlowNotFound: errorAnswer(
      'No flow is deployed under the name, or the tenant is unregistered or disabled: byte for byte the same answer.',
      FLOW_NOT_FOUND,
    ),
    RateLimited: errorAnswer(
      "The key's token bucket is empty (keys created with `--rate-limit <rps>`: `rps` tokens at first use, refilled continuously at `rps` per second, capacity `2 × rps`, one token per request).",
      [Messages.rateLimited],
      {
        headers: {
          'X-RateLimit-Limit': ref('headers', 'RateLimitLimit'),
          'X-RateLimit-Remaining': ref('headers', 'RateLimitRemaining'),
          'X-RateLimit-Reset': ref('headers', 'RateLimitReset'),
          'Retry-After': ref('headers', 'RetryAfterRateLimited'),
        },
      },
    ),
    PayloadTooLarge: {
      description:
        "The body is above the ceiling: the flow's `max_message_bytes`, else the platform setting `max_message_bytes` (default 1 MiB). A declared `Content-Length` over it is refused unread (no `100 Continue`); a streamed body as soon as it passes. Plain text, also for a SOAP request.",
      headers: { Connection: ref('headers', 'ConnectionClose') },
      content: { 'text/plain; charset=utf-8': { schema: { const: PAYLOAD_TOO_LARGE } } },
    },
    BodyTimedOut: errorAnswer(
      'The whole body did not arrive within `request_body_timeout_secs` (default 30) of the route starting to read it. Plain HTTP, also for a SOAP request.',
      { type: 'string', pattern: '^the request body did not arrive within [0-9]+ s$' },
      { headers: { Connection: ref('headers', 'ConnectionClose') } },
    ),
  },
  securitySchemes: {
    apiKey: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'svk_ followed by 32 hex digits',
      description:
        "An API key of the path's tenant (`svc keys create`): `Authorization: Bearer svk_...` (the scheme in any case, one header). Checked before any body byte is read, in this order: the key (401), the tenant registered and enabled (404), the flow's `required_scope` and the key's allowlist (403), the key's rate limit (429); storage failing while deciding is 503. Under `svc serve --no-auth` the gate does not run and `Authorization` is ignored.",
    },
  },
};

/** A JSON body nested deeper than this is refused with 400 before it is parsed. */
export const NESTING_NOTE = `A JSON body nesting deeper than ${JSON_MAX_DEPTH} levels is refused with 400 before parsing.`;

/** The replay and SOAP headers an answer of a flow may carry beside the flow's own `response_header_<name>` headers. */
export const flowAnswerHeaders: Readonly<Record<string, ReferenceObject>> = {
  [canonical(REPLAY_HEADER)]: ref('headers', 'IdempotentReplay'),
  [canonical(FIRST_CORRELATION_HEADER)]: ref('headers', 'FirstCorrelationId'),
  [SOAP_WARNING_HEADER]: ref('headers', 'SoapWarning'),
};

/** `x-svc-first-correlation-id` -> `X-Svc-First-Correlation-Id`, as the docs write header names. */
export function canonical(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

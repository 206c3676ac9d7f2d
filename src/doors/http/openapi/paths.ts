/**
 * Every route of the HTTP door as an OpenAPI operation: the node:http fast path's /run and
 * /enqueue, and the Fastify routes (metadata, WSDL, connector events, health, this document).
 * HEAD operations are derived from the GET ones in document.ts.
 */
import { CONNECTOR_BODY_MAX_BYTES } from '../connector-route.js';
import {
  components,
  FLOW_NOT_FOUND,
  flowAnswerHeaders,
  Messages,
  NESTING_NOTE,
  ref,
  SOAP_11,
  SOAP_12,
  soapFaults,
} from './components.js';
import { errorAnswer, errorBody, json } from './responses.js';
import type { Content, OperationObject, PathItemObject, ResponseObject, SecurityRequirement } from './types.js';

const KEY: readonly SecurityRequirement[] = [{ apiKey: [] }];
const PUBLIC: readonly SecurityRequirement[] = [];
const flowPath = [ref('parameters', 'Tenant'), ref('parameters', 'FlowName')];
const deliveryHeaders = [
  ref('parameters', 'CorrelationId'),
  ref('parameters', 'RequestId'),
  ref('parameters', 'Signature'),
];

const GATE_REFUSED =
  'The gate: `Authorization` missing or malformed, more than one `Authorization` header, a key unknown, revoked, expired or of another tenant (causes not told apart).';

function unauthorized(withSignature: boolean): ResponseObject {
  return errorAnswer(
    withSignature
      ? `${GATE_REFUSED} Or, under \`--secret\`, \`X-Svc-Signature\` missing or wrong (\`signature mismatch\`).`
      : GATE_REFUSED,
    withSignature ? [Messages.unauthorized, Messages.signatureMismatch] : [Messages.unauthorized],
    { headers: { 'WWW-Authenticate': ref('headers', 'WwwAuthenticate') } },
  );
}

/** 400, naming the path check first; `content` when the body is more than the default error body. */
function badRequest(description: string, content?: Content): ResponseObject {
  const full =
    `A path component breaking the name rule (\`invalid flow identifier\`, checked first). ${description}`.trim();
  return content === undefined ? errorAnswer(full, { type: 'string' }) : { description: full, content };
}

/** 404 with the body of a missing flow, for a route whose causes differ. */
const flowNotFound = (description: string): ResponseObject => errorAnswer(description, FLOW_NOT_FOUND);

const internalError = (description: string): ResponseObject => errorAnswer(description, [Messages.internal]);

const SHUTTING_DOWN = 'The server is closing: the request is refused and the connection closed.';
/** 503 of a public route: only while the server closes. */
const shuttingDown = errorAnswer(SHUTTING_DOWN, [Messages.shuttingDown]);
/** 503 of a route behind the gate. */
const gateUnavailable = errorAnswer(
  "The gate's storage failed while deciding (`authorization temporarily unavailable`: never a pass, never 401), or the server is closing (`server is shutting down`).",
  [Messages.gateUnavailable, Messages.shuttingDown],
);

/** A body that is the default error body or a false `validate` rule's `{"error","step"}`. */
const errorOrRejection = json({ oneOf: [errorBody({ type: 'string' }), ref('schemas', 'ValidationRejected')] });

/** What a flow answers: the output decides body and content type; no envelope, no `ok` field. */
const flowOutput: Content = {
  'application/json': { schema: ref('schemas', 'AnyJson') },
  'text/plain; charset=utf-8': { schema: { type: 'string', description: 'A string output, verbatim.' } },
  'application/xml; charset=utf-8': { schema: ref('schemas', 'XmlDocument') },
  [SOAP_11]: { schema: ref('schemas', 'SoapEnvelope11') },
  [SOAP_12]: { schema: ref('schemas', 'SoapEnvelope12') },
};

const run: OperationObject = {
  operationId: 'runFlow',
  summary: 'Run the latest version of a flow and answer with its output',
  description: `Order of work: path check, gate, resolve \`latest\` (404), size ceiling and body read (413, 408), signature (401), parse (400), execution slot (503), run. SOAP requests get SOAP Faults for what fails after SOAP is detected; what is refused before (bad path, the gate, no flow, 413, 408, signature, shutting down) stays plain HTTP. Request headers other than these are readable by the flow as \`ctx.headers\` (hop-by-hop and credential headers excepted). ${NESTING_NOTE}`,
  tags: ['flows'],
  parameters: [...flowPath, ...deliveryHeaders, ref('parameters', 'SoapAction')],
  requestBody: {
    description:
      'Parsed by `Content-Type`: `application/json`, none, or any type not listed here as JSON (an empty body is `null`); `application/xml` as an XML value kept as XML through the flow; `text/xml` and `application/soap+xml` as SOAP (1.1 and 1.2) when a `SOAPAction` header is present or an `Envelope` element appears in the first 512 bytes, otherwise as plain XML.',
    required: false,
    content: {
      'application/json': { schema: ref('schemas', 'AnyJson') },
      'application/xml': { schema: ref('schemas', 'XmlDocument') },
      'text/xml': { schema: ref('schemas', 'SoapEnvelope11') },
      'application/soap+xml': { schema: ref('schemas', 'SoapEnvelope12') },
      '*/*': { schema: ref('schemas', 'AnyJson') },
    },
  },
  responses: {
    '200': {
      description:
        "The flow completed. The output decides the body: a JSON value as `application/json`, a string verbatim as `text/plain; charset=utf-8`, an XML value as `application/xml; charset=utf-8`, `null` as an empty body without `Content-Type`. A SOAP request gets an envelope of its version. Headers set by the flow's `response_header_<name>` keys are added.",
      headers: flowAnswerHeaders,
      content: flowOutput,
    },
    default: {
      description:
        "A status the flow chose with `response_status`, or the status of an error a `## Fault:` section handled (the handler's output is the body, a SOAP request gets a Fault with that status), or a replayed delivery's recorded status. Body and headers as for 200.",
      headers: flowAnswerHeaders,
      content: flowOutput,
    },
    '400': badRequest(
      'Malformed JSON or XML (JSON nested too deep included), a `syntactic` validate rule that was false (`{"error","step"}`), or a SOAP envelope that cannot be used (a SOAP Fault, 400 on both versions); a SOAP 1.2 request\'s false syntactic rule is a 400 Fault too.',
      {
        ...errorOrRejection,
        ...soapFaults('1.1', '1.2'),
      },
    ),
    '401': unauthorized(true),
    '403': ref('responses', 'Forbidden'),
    '404': ref('responses', 'FlowNotFound'),
    '408': ref('responses', 'BodyTimedOut'),
    '409': errorAnswer(
      "A delivery of the same `dedup_key` is still in flight (nothing runs; retry later), or a correlation is already open for the flow's key. A SOAP 1.2 request gets a Fault.",
      [Messages.duplicateInFlight, Messages.correlationOpen],
      { headers: { 'X-Svc-First-Correlation-Id': ref('headers', 'FirstCorrelationId') }, also: soapFaults('1.2') },
    ),
    '413': {
      ...components.responses.PayloadTooLarge!,
      description: `${components.responses.PayloadTooLarge!.description} Also when a backend's response to \`http_egress\` passed its own ceiling.`,
    },
    '422': {
      description:
        'A `semantic` validate rule was false (`{"error","step"}`), a `dedup_key` could not be evaluated or was empty, or a correlation was refused. A SOAP 1.2 request gets a Fault.',
      content: {
        ...errorOrRejection,
        ...soapFaults('1.2'),
      },
    },
    '429': ref('responses', 'RateLimited'),
    '500': {
      description:
        'A defect in the flow (`flow execution failed`), its fault handler failing (`fault handler failed`), a stored artifact failing its integrity check (`internal error`, not run), or the run passing `flow_max_duration_secs` (`{"error","step","limit_secs"}`). Every SOAP 1.1 Fault but a malformed envelope has this status, whatever the error (server busy included, with `Retry-After`).',
      headers: { 'Retry-After': ref('headers', 'RetryAfterBusy') },
      content: {
        ...json({
          oneOf: [
            errorBody({ enum: [Messages.flowFailed, Messages.faultHandlerFailed, Messages.internal] }),
            ref('schemas', 'FlowTimeExceeded'),
          ],
        }),
        ...soapFaults('1.1', '1.2'),
      },
    },
    '502': errorAnswer(
      'A call out of the flow failed (a non-2xx answer, a transport error or timeout, an unusable answer). A SOAP 1.2 request gets a Fault.',
      [Messages.flowFailed],
      { also: soapFaults('1.2') },
    ),
    '503': errorAnswer(
      "Every execution slot is taken (`max_concurrent_flow_executions`; answered before the flow starts, so safe to retry at once, with `Retry-After`), the flow-state store cannot be read or written, the registry cannot be read as the execution starts, the gate's storage failed while deciding, or the server is closing. A SOAP 1.2 request gets a Fault for the first three.",
      [
        Messages.gateUnavailable,
        Messages.busy,
        Messages.stateUnavailable,
        Messages.registryUnavailable,
        Messages.shuttingDown,
      ],
      { headers: { 'Retry-After': ref('headers', 'RetryAfterBusy') }, also: soapFaults('1.2') },
    ),
  },
  security: KEY,
};

const enqueue: OperationObject = {
  operationId: 'enqueueMessage',
  summary: 'Write a message to the durable queue of a flow',
  description: `Order of work: path check, gate (including the flow's \`required_scope\`), size ceiling and body read, signature, parse, correlation id, append and sync, answer. The flow need not exist; it runs later, on the version that is \`latest\` when a worker reaches the message. Never refused for execution load. ${NESTING_NOTE}`,
  tags: ['flows'],
  parameters: [...flowPath, ...deliveryHeaders],
  requestBody: {
    description:
      'JSON (any `Content-Type` but `application/xml`; an empty body is `null`), or XML for `application/xml`, flattened to JSON before storage (child elements become keys, the root tag is dropped).',
    required: false,
    content: {
      'application/json': { schema: ref('schemas', 'AnyJson') },
      'application/xml': { schema: ref('schemas', 'XmlDocument') },
      '*/*': { schema: ref('schemas', 'AnyJson') },
    },
  },
  responses: {
    '202': { description: 'Durably written.', content: json(ref('schemas', 'EnqueueAccepted')) },
    '400': badRequest('A body that is not JSON (or XML for `application/xml`).'),
    '401': unauthorized(true),
    '403': ref('responses', 'Forbidden'),
    '404': flowNotFound('The tenant is unregistered or disabled (a missing flow is not refused).'),
    '408': ref('responses', 'BodyTimedOut'),
    '413': ref('responses', 'PayloadTooLarge'),
    '429': ref('responses', 'RateLimited'),
    '500': internalError('The queue could not be written (the cause is in the operational log).'),
    '503': gateUnavailable,
    '507': errorAnswer(
      "The tenant's queues reached one of their bounds: `max_queues_per_tenant` (a submission that would make one more queue) or `max_queue_bytes_per_tenant` (the bytes its queues take). Nothing is written. Not a load refusal: it passes when the tenant's workers drain its queues (bytes) or the operator raises the bound. The text names the bound and the setting.",
      { type: 'string', pattern: '^queue (limit|storage limit) reached: ' },
    ),
  },
  security: KEY,
};

const metadata: OperationObject = {
  operationId: 'getFlowMetadata',
  summary: 'Metadata of the latest artifact of a flow',
  description:
    'A success costs no rate-limit token, and the rate limit is never applied here (no 429); a refusal of a valid key still costs one.',
  tags: ['flows'],
  parameters: flowPath,
  responses: {
    '200': { description: 'The latest artifact.', content: json(ref('schemas', 'FlowMetadata')) },
    '400': badRequest(''),
    '401': unauthorized(false),
    '403': ref('responses', 'Forbidden'),
    '404': ref('responses', 'FlowNotFound'),
    '500': internalError('The stored artifact fails its integrity check, or the registry could not be read.'),
    '503': gateUnavailable,
  },
  security: KEY,
};

const wsdl: OperationObject = {
  operationId: 'getFlowWsdl',
  summary: 'The generated WSDL 1.1 of a SOAP flow',
  description:
    "Document/literal, one service, port and operation, a SOAP 1.1 binding; the operation and namespace come from the flow's `soap_operation` and `soap_namespace`, the port address from the request's `Host` and scheme. Public, but only for a registered and enabled tenant (checked under `--no-auth` too).",
  tags: ['soap'],
  parameters: [...flowPath, ref('parameters', 'ForwardedProto')],
  responses: {
    '200': {
      description: 'The WSDL.',
      content: { 'text/xml; charset=utf-8': { schema: { type: 'string', description: 'A WSDL 1.1 document.' } } },
    },
    '400': badRequest(''),
    '404': flowNotFound(
      'No flow under the name, a flow without both `soap_operation` and `soap_namespace`, or a tenant unregistered or disabled.',
    ),
    '500': internalError('The registry could not be read, or the stored artifact fails its integrity check.'),
    '503': shuttingDown,
  },
  security: PUBLIC,
};

const connector: OperationObject = {
  operationId: 'recordConnectorEvent',
  summary: 'Record an event a connector observed (one log row)',
  description: `A success costs no rate-limit token, and the rate limit is never applied here (no 429); no signature is needed. ${NESTING_NOTE}`,
  tags: ['connector'],
  parameters: [ref('parameters', 'Tenant'), ref('parameters', 'ConnectorFlow')],
  requestBody: {
    description: `At most ${CONNECTOR_BODY_MAX_BYTES} bytes (${CONNECTOR_BODY_MAX_BYTES / 1024} KiB); a larger or too slow body is reported as invalid JSON (400), not 413 or 408, and the connection is closed after the answer.`,
    required: true,
    content: json(ref('schemas', 'ConnectorEvent')),
  },
  responses: {
    '202': { description: 'Recorded; no body.' },
    '400': badRequest(
      'A body that is not a JSON object, too large or too slow, a field of the wrong type, or another `event_type`.',
    ),
    '401': unauthorized(false),
    '403': ref('responses', 'Forbidden'),
    '404': ref('responses', 'FlowNotFound'),
    '500': internalError('An unexpected failure of the service (the cause is in the operational log).'),
    '503': gateUnavailable,
  },
  security: KEY,
};

const health: OperationObject = {
  operationId: 'getHealth',
  summary: 'Liveness',
  description: 'No key, no database access.',
  tags: ['service'],
  responses: {
    '200': { description: 'The process answers.', content: json(ref('schemas', 'Health')) },
    '503': shuttingDown,
  },
  security: PUBLIC,
};

const documentHeaders = { ETag: ref('headers', 'ETag'), 'Cache-Control': ref('headers', 'CacheControl') };

const openApi: OperationObject = {
  operationId: 'getOpenApiDocument',
  summary: 'This OpenAPI 3.1 document',
  description:
    'Public, like `/health`. Built once when the process starts; clients may keep it for the `Cache-Control` time and revalidate with `If-None-Match`.',
  tags: ['service'],
  parameters: [ref('parameters', 'IfNoneMatch')],
  responses: {
    '200': { description: 'The document.', headers: documentHeaders, content: json(ref('schemas', 'OpenApiDocument')) },
    '304': {
      description: '`If-None-Match` names the current `ETag`: the copy the client holds is current.',
      headers: documentHeaders,
    },
    '503': shuttingDown,
  },
  security: PUBLIC,
};

/** The GET and POST operations by path (OpenAPI path templates). */
export const operationsByPath: Readonly<Record<string, PathItemObject>> = {
  '/flows/{tenant}/{name}/run': { post: run },
  '/flows/{tenant}/{name}/enqueue': { post: enqueue },
  '/flows/{tenant}/{name}': { get: metadata },
  '/flows/{tenant}/{name}/wsdl': { get: wsdl },
  '/connector/events/{tenant}/{flow}': { post: connector },
  '/health': { get: health },
  '/openapi.json': { get: openApi },
};

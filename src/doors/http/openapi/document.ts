/** The OpenAPI 3.1 document of the HTTP door, built once at load: the frozen object, its bytes and their ETag. */
import { createHash } from 'node:crypto';
import { components } from './components.js';
import { operationsByPath } from './paths.js';
import type { OpenApiDocument, OperationObject, PathItemObject, ReferenceObject, ResponseObject } from './types.js';

/** The service version this document describes (package.json's `version`; the test holds them equal). */
export const API_VERSION = '0.1.0';

const DESCRIPTION = `The HTTP door of \`svc serve\`: running flows, queueing messages, flow metadata, WSDL, connector events and health. Prose reference: docs/http-api.md; every error code: docs/errors.md.

- **Errors** are \`{"ok":false,"error":"<message>"}\` as \`application/json\`, except a false \`validate\` rule (\`{"error","step"}\`), the time limit (\`{"error","step","limit_secs"}\`), 413 (plain text) and SOAP requests (SOAP Faults).
- **An unknown route or method** answers 404 \`{"ok":false,"error":"no route for <METHOD> <path>"}\`.
- **Every route** answers 503 \`server is shutting down\` while the server closes, and Node answers 431 to a request head above 16 KiB.
- **HEAD** is answered on every GET route: the GET's status and headers, no body.
- **A refusal made before the body is read** (bad path, the gate) closes the connection when a body was announced; \`Expect: 100-continue\` is answered only when the route is about to read the body.
- **\`svc serve --no-auth\`**: the gate does not run and \`Authorization\` is ignored; \`--secret <key>\`: \`/run\` and \`/enqueue\` need \`X-Svc-Signature\`.
- **Not described here**: the management UI under \`/ui/\` (HTML pages for people, behind a login session and CSRF tokens, with no API-key gate: docs/ui.md), the gRPC door (its own port, \`--grpc-port\`: docs/grpc.md), and \`GET /metrics\` (the Prometheus text format for a scraper, served only with \`svc serve --metrics\` or on its own \`--metrics-port\`: docs/observability.md).`;

function resolveResponse(response: ResponseObject | ReferenceObject): ResponseObject {
  if (!('$ref' in response)) return response;
  const name = response.$ref.slice('#/components/responses/'.length);
  const found = components.responses[name];
  if (found === undefined) throw new Error(`no component response ${response.$ref}`);
  return found;
}

/** HEAD of a GET route: Fastify answers it with the GET's status and headers and drops the body. */
function headOf(get: OperationObject): OperationObject {
  const responses = Object.fromEntries(
    Object.entries(get.responses).map(([status, response]) => {
      const { description, headers } = resolveResponse(response);
      return [status, headers === undefined ? { description } : { description, headers }];
    }),
  );
  return {
    ...get,
    operationId: `${get.operationId}Head`,
    summary: `${get.summary} (status and headers only)`,
    description: `As GET, without a body. ${get.description ?? ''}`.trim(),
    responses,
  };
}

function withHeadRoutes(paths: Readonly<Record<string, PathItemObject>>): Record<string, PathItemObject> {
  return Object.fromEntries(
    Object.entries(paths).map(([path, item]) => [
      path,
      item.get === undefined ? item : { ...item, head: headOf(item.get) },
    ]),
  );
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export const OPENAPI_DOCUMENT: OpenApiDocument = deepFreeze({
  openapi: '3.1.0',
  info: { title: 'svc flow execution service', version: API_VERSION, description: DESCRIPTION },
  jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
  tags: [
    { name: 'flows', description: 'Running, queueing and describing deployed flows (API key).' },
    { name: 'soap', description: 'The WSDL of SOAP flows (SOAP requests themselves go to /run).' },
    { name: 'connector', description: 'Events reported by connectors (API key).' },
    { name: 'service', description: 'Health and this document (public).' },
  ],
  paths: withHeadRoutes(operationsByPath),
  components,
});

/** The document as sent: serialised once. */
export const OPENAPI_BYTES: Buffer = Buffer.from(JSON.stringify(OPENAPI_DOCUMENT));

/** A strong validator of those bytes. */
export const OPENAPI_ETAG = `"${createHash('sha256').update(OPENAPI_BYTES).digest('hex').slice(0, 32)}"`;

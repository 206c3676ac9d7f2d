/**
 * Builds the HTTP door (not yet listening): the lean front reads plain POSTs to /run and /enqueue
 * off the socket, node:http parses everything else (the hot routes' odd requests go the same fast
 * path from there), and Fastify serves every other route.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FlowExecutor } from '../../app/runtime/flow-executor.js';
import type { Logger } from '../../common/logger.js';
import type { LoadedFlow } from '../../engine/index.js';
import type { Gate } from '../../gate/gate.js';
import type { EventEmitter } from '../../store/event-log/event-sink.js';
import { SvcError } from '../../common/errors.js';
import { sendAnswer } from './answer.js';
import { answerMustClose, awaitingContinue } from './body.js';
import { connectorRoutes } from './connector-route.js';
import { closingAnswer, createFastPath, type FlowRouteHandler } from './fast-path.js';
import { healthRoutes } from './health.js';
import { installLeanFront, type LeanFront } from './lean-front.js';
import { metadataRoutes } from './metadata-route.js';
import { metricsRoutes } from './metrics-route.js';
import type { HttpObserver, MetricsExposition } from './observer.js';
import { openApiRoutes } from './openapi-route.js';
import { clientErrorStatus, sendError } from './reply-error.js';
import { createRunHandler } from './run-handler.js';
import { wsdlRoutes, type WsdlRouteDeps } from './wsdl-route.js';
import type { UiDeps } from '../ui/deps.js';
import { uiRoutes } from '../ui/plugin.js';

export interface HttpDeps {
  /** Absent under `--no-auth`. */
  readonly gate: Gate<LoadedFlow> | undefined;
  /** `--secret`: X-Svc-Signature required on /run and /enqueue. */
  readonly secret: string | undefined;
  readonly executor: FlowExecutor;
  readonly events: EventEmitter;
  readonly wsdl: WsdlRouteDeps;
  /** The queue door's /enqueue handler (enqueue-handler.ts); absent: no /enqueue route. */
  readonly enqueue?: FlowRouteHandler;
  /** The operational log: failures the caller sees only as `internal error` are written here. */
  readonly log: Logger;
  /** The management UI under /ui; absent: no UI routes. */
  readonly ui?: UiDeps;
  /** `request_body_timeout_secs`, in milliseconds. @default DEFAULT_BODY_TIMEOUT_MS */
  readonly bodyTimeoutMs?: number;
  /** Told of every answered request (metrics). @default none */
  readonly observer?: HttpObserver;
  /** Serves `GET /metrics` on this server (`--metrics`); absent: no such route here. */
  readonly metrics?: MetricsExposition;
}

/** How long an idle keep-alive connection is kept open. Milliseconds. */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

export async function buildServer(deps: HttpDeps): Promise<FastifyInstance> {
  let closing = false;
  let front: LeanFront | undefined;
  const fastPath = createFastPath({
    gate: deps.gate,
    run: createRunHandler({ secret: deps.secret, executor: deps.executor, bodyTimeoutMs: deps.bodyTimeoutMs }),
    enqueue: deps.enqueue,
    closing: () => closing,
    observer: deps.observer,
  });
  const app = Fastify({
    logger: false,
    // The shutdown answer is the service's own (closingAnswer), the same on every route.
    return503OnClosing: false,
    // maxParamLength: Fastify's default (100) would answer 414 to valid names of 101-128 bytes; the
    // name rule (400 invalid flow identifier) decides instead. Node caps the request line anyway.
    routerOptions: { maxParamLength: 65_536 },
    // POST .../run and .../enqueue are answered by the node:http fast path; the rest goes to Fastify.
    serverFactory: (fastify) => {
      const server = createServer((req, res) => fastPath.node(req, res) || fastify(req, res));
      front = installLeanFront(server, { serve: (ex) => fastPath.lean(ex, ex.head.route), serves: fastPath.serves });
      // Node's 5 s idle keep-alive races clients that reuse a connection idle for about as long (the
      // request meets a socket the server is closing: "fetch failed", "other side closed"). Fastify's
      // own default, longer than the usual 60 s idle timeout of load balancers in front.
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      return server;
    },
    // Errors Fastify raises before any route runs (a URL it cannot decode) answer in the service's body shape.
    frameworkErrors: (err, _req, reply) => sendError(reply, err),
    // Requests Node's parser rejects, likewise: the service's body shape, and the connection closed.
    clientErrorHandler: answerClientError,
    // No route declares a JSON schema (bodies are read and checked by the routes themselves), so
    // Fastify's default compilers, ajv and fast-json-stringify (about 150 modules, some 50 ms of every
    // start), are never needed. A route that declared one would fail at registration, loudly.
    schemaController: { compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler } },
  });
  app.addHook('preClose', async () => {
    closing = true;
    // node:http's close ends its own idle connections; the lean front's are its to end.
    front?.close();
  });
  app.addHook('onRequest', async (_req, reply) => {
    if (closing) await sendAnswer(reply, closingAnswer());
  });
  // A body a route gave up reading (connector events, the UI's forms read through readBody), or a
  // large or unbounded one no route read (an unknown route, a GET with a body), may still be
  // arriving: the answer closes the connection, whatever status the route chose (the connector's
  // 400, the UI's page). The fast path does the same in writeAnswer.
  app.addHook('onSend', async (req, reply, payload) => {
    if (answerMustClose(req.raw)) reply.header('connection', 'close');
    return payload;
  });
  const observer = deps.observer;
  if (observer !== undefined) {
    // The route template (bounded), never the path: a request no route took is `unmatched`.
    app.addHook('onResponse', async (req, reply) => {
      observer.answered(req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    });
  }
  // Bodies are read by the routes themselves, after the gate and under a per-request ceiling:
  // no parser may read a byte first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  // Unknown routes and Fastify's own errors answer in the service's body shape, not Fastify's.
  app.setNotFoundHandler((req, reply) => sendError(reply, noRoute(req.method, req.url)));
  app.setErrorHandler((err, req, reply) => {
    // A request no route took is a 404 whatever else is wrong with it (an unreadable Content-Type, say).
    if (req.routeOptions.url === undefined) return sendError(reply, noRoute(req.method, req.url));
    if (!(err instanceof SvcError) && clientErrorStatus(err) === undefined)
      deps.log.error({ err, method: req.method, url: req.url.split('?', 1)[0] }, 'HTTP request failed');
    return sendError(reply, err);
  });
  // `Expect: 100-continue`: Node would answer 100 at once, inviting the body before the gate and the
  // size check ran. Hold it back; readBody sends it when a route actually reads the body.
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.set(req, res);
    app.server.emit('request', req, res);
  });
  await app.register(healthRoutes);
  if (deps.metrics !== undefined) await app.register(metricsRoutes(deps.metrics));
  await app.register(openApiRoutes);
  await app.register(metadataRoutes({ gate: deps.gate, executor: deps.executor }));
  await app.register(connectorRoutes({ gate: deps.gate, events: deps.events, bodyTimeoutMs: deps.bodyTimeoutMs }));
  await app.register(wsdlRoutes(deps.wsdl, deps.log));
  if (deps.ui !== undefined)
    await app.register(uiRoutes(deps.ui, { bodyTimeoutMs: deps.bodyTimeoutMs }), { prefix: '/ui' });
  return app;
}

function noRoute(method: string, url: string): SvcError {
  return new SvcError('SVC_ERR_NOT_FOUND', `no route for ${method} ${url.split('?', 1)[0]}`);
}

/** Node's parser codes with a status of their own; any other parse failure is a 400. */
const CLIENT_ERROR_STATUS: Readonly<Record<string, [number, string]>> = Object.freeze({
  HPE_HEADER_OVERFLOW: [431, 'request header fields too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request timeout'],
});

/** Answers a request Node could not parse (when the socket can still be written) and closes it. */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A reset or an abort leaves nothing to answer.
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, message] = CLIENT_ERROR_STATUS[err.code ?? ''] ?? [400, 'bad request'];
  const body = JSON.stringify({ ok: false, error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function noSchemaCompiler(): never {
  throw new Error('route schemas are not used by this service: read and check the body in the route');
}

/** Builds the Fastify app (not yet listening). Each route area is an encapsulated plugin. */
import Fastify, { type FastifyInstance } from 'fastify';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { FlowRunner } from '../../app/flow-runner.js';
import type { Gate } from '../../gate/gate.js';
import type { EventEmitter } from '../../store/event-sink.js';
import { SvcError } from '../../common/errors.js';
import { awaitingContinue } from './body.js';
import { connectorRoutes } from './connector-route.js';
import { healthRoutes } from './health.js';
import { metadataRoutes } from './metadata-route.js';
import { sendError } from './reply-error.js';
import { createFastPath } from './fast-path.js';
import { flowRoute, type FlowRouteHandler } from './flow-route.js';
import { createRunHandler } from './run-handler.js';
import { wsdlRoutes, type WsdlRouteDeps } from './wsdl-route.js';

export interface HttpDeps {
  /** Absent under `--no-auth`. */
  readonly gate: Gate | undefined;
  /** `--secret`: X-Svc-Signature required on /run and /enqueue. */
  readonly secret: string | undefined;
  readonly runner: FlowRunner;
  readonly events: EventEmitter;
  readonly wsdl: WsdlRouteDeps;
  /** The queue door's /enqueue handler (enqueue-handler.ts); absent: no /enqueue route. */
  readonly enqueue?: FlowRouteHandler;
}

export async function buildServer(deps: HttpDeps): Promise<FastifyInstance> {
  // maxParamLength: Fastify's default (100) would answer 414 to valid names of 101-128 bytes; the
  // name rule (400 invalid flow identifier) decides instead. Node caps the request line anyway.
  const handler = createRunHandler({ secret: deps.secret, runner: deps.runner });
  let closing = false;
  const fastPath = createFastPath({ gate: deps.gate, run: handler, enqueue: deps.enqueue, closing: () => closing });
  const app = Fastify({
    logger: false,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 65_536 },
    // POST .../run and .../enqueue are answered by the node:http fast path; the rest goes to Fastify.
    serverFactory: (fastify) => createServer((req, res) => fastPath(req, res) || fastify(req, res)),
  });
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Bodies are read by the routes themselves, after the gate and under a per-request ceiling:
  // no parser may read a byte first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));
  // Unknown routes and Fastify's own errors answer in the service's body shape, not Fastify's.
  app.setNotFoundHandler((req, reply) => sendError(reply, new SvcError('SVC_ERR_NOT_FOUND', `no route for ${req.method} ${req.url.split('?', 1)[0]}`)));
  app.setErrorHandler((err, _req, reply) => sendError(reply, err));
  // `Expect: 100-continue`: Node would answer 100 at once, inviting the body before the gate and the
  // size check ran. Hold it back; readBody sends it when a route actually reads the body.
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.set(req, res);
    app.server.emit('request', req, res);
  });
  await app.register(healthRoutes);
  await app.register(flowRoute('run', { gate: deps.gate, handler }));
  await app.register(metadataRoutes({ gate: deps.gate, runner: deps.runner }));
  await app.register(connectorRoutes({ gate: deps.gate, events: deps.events }));
  await app.register(wsdlRoutes(deps.wsdl));
  if (deps.enqueue !== undefined) await app.register(flowRoute('enqueue', { gate: deps.gate, handler: deps.enqueue }));
  return app;
}

/**
 * POST .../run and POST .../enqueue ahead of Fastify's router, hooks and reply machinery
 * (measured: Fastify's per-request work was the largest cost of /run after the socket write),
 * whether the lean front (lean-front.ts) or node:http parsed the request. These two routes are
 * served only here: the name rule, the gate before any body byte is read, then the route's
 * framework-free handler. Every other request goes on to Fastify.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidFlowIdentifier, shuttingDown } from '../../common/errors.js';
import type { LoadedFlow } from '../../engine/index.js';
import type { Gate, GateRoute } from '../../gate/gate.js';
import {
  errorAnswer,
  writeAnswerAtTurnEnd,
  writeAnswerTo,
  type AnswerSink,
  type AnswerTarget,
  type HttpAnswer,
} from './answer.js';
import { NodeHotRequest, type HotRequest } from './hot-request.js';
import { admit, refusalAnswer } from './inbound.js';
import { ENQUEUE_ROUTE, RUN_ROUTE, type HttpObserver } from './observer.js';

/** A hot route's parts as they are in the URL (percent-encoded). */
export interface HotRoute {
  readonly tenant: string;
  readonly name: string;
  readonly route: 'run' | 'enqueue';
}

/**
 * `/flows/{tenant}/{name}/run` or `.../enqueue`, with any query: the two segments non-empty and
 * free of `/`, `?` and `#`. Undefined for any other URL. Read with indexOf, not a regular
 * expression with captures (the same answers; fewer allocations on every request).
 */
export function hotRoute(url: string): HotRoute | undefined {
  if (!url.startsWith('/flows/')) return undefined;
  const query = url.indexOf('?');
  const end = query === -1 ? url.length : query;
  const hash = url.indexOf('#');
  if (hash !== -1 && hash < end) return undefined;
  const first = url.indexOf('/', 7);
  if (first <= 7 || first >= end) return undefined;
  const second = url.indexOf('/', first + 1);
  if (second <= first + 1 || second >= end) return undefined;
  const tail = end - second - 1;
  let route: 'run' | 'enqueue';
  if (tail === 3 && url.startsWith('run', second + 1)) route = 'run';
  else if (tail === 7 && url.startsWith('enqueue', second + 1)) route = 'enqueue';
  else return undefined;
  return { tenant: url.slice(7, first), name: url.slice(first + 1, second), route };
}

/** A path segment decoded; most have nothing to decode, and skip the call. Throws URIError on a bad escape. */
function decodeSegment(segment: string): string {
  return segment.includes('%') ? decodeURIComponent(segment) : segment;
}

/**
 * A flow route's work after admission: reads the body itself and answers as plain data. The gate
 * enforces the flow's `required_scope` on /enqueue as on /run (403 before the queue write).
 */
export type FlowRouteHandler = (
  raw: HotRequest,
  tenant: string,
  name: string,
  /** The flow the gate read this turn (undefined: none read, e.g. under `--no-auth`). */
  admitted: LoadedFlow | undefined,
) => Promise<HttpAnswer>;

export interface FastPathDeps {
  gate: Gate<LoadedFlow> | undefined;
  run: FlowRouteHandler;
  /** Absent when the server has no queue door. */
  enqueue: FlowRouteHandler | undefined;
  /** True once the server is closing: new requests get the one shutdown answer (`closingAnswer`). */
  closing(): boolean;
  /** Told of every answer (metrics). @default none */
  observer?: HttpObserver | undefined;
}

/** The hot routes' one pipeline, for both fronts: node:http's request listener and the lean front. */
export interface FastPath {
  /** node:http's request listener: takes the hot routes and answers false for anything else. */
  node(req: IncomingMessage, res: ServerResponse): boolean;
  /** True when a handler serves this route (without a queue door, /enqueue is not a hot route). */
  serves(route: 'run' | 'enqueue'): boolean;
  /** Serves a hot route's request parsed by the lean front; its answer goes to `exchange.deliver`. */
  lean(request: HotRequest & AnswerSink & { readonly url: string }, route: HotRoute): void;
}

export function createFastPath(deps: FastPathDeps): FastPath {
  const observer = deps.observer;
  const serve = (m: HotRoute, request: HotRequest, target: AnswerTarget): void => {
    const route: GateRoute = m.route;
    const handler = route === 'run' ? deps.run : deps.enqueue;
    const started = observer === undefined ? 0 : performance.now();
    const template = route === 'run' ? RUN_ROUTE : ENQUEUE_ROUTE;
    const answerNow = (answer: HttpAnswer): void => {
      observer?.answered(template, answer.status, (performance.now() - started) / 1000);
      writeAnswerTo(target, answer);
    };
    if (deps.closing()) return answerNow(closingAnswer());
    let tenant: string;
    let name: string;
    try {
      tenant = decodeSegment(m.tenant);
      name = decodeSegment(m.name);
    } catch {
      return answerNow(errorAnswer(invalidFlowIdentifier()));
    }
    let admitted: LoadedFlow | undefined;
    try {
      admitted = admit(deps.gate, request, tenant, name, route);
    } catch (refusal) {
      return answerNow(refusalAnswer(request, refusal));
    }
    const answerLater = (answer: HttpAnswer): void => {
      observer?.answered(template, answer.status, (performance.now() - started) / 1000);
      writeAnswerAtTurnEnd(target, answer);
    };
    handler!(request, tenant, name, admitted).then(answerLater, (err: unknown) => answerLater(errorAnswer(err)));
  };
  const serves = (route: 'run' | 'enqueue'): boolean => route === 'run' || deps.enqueue !== undefined;
  return {
    node(req, res) {
      if (req.method !== 'POST') return false;
      const m = hotRoute(req.url ?? '');
      if (m === undefined || !serves(m.route)) return false;
      serve(m, new NodeHotRequest(req), res);
      return true;
    },
    serves,
    lean(request, route) {
      serve(route, request, request);
    },
  };
}

/** The answer to a request that arrives while the server closes, on every route: 503, and the connection is not kept. */
export function closingAnswer(): HttpAnswer {
  const answer = errorAnswer(shuttingDown());
  return { ...answer, headers: { ...answer.headers, connection: 'close' } };
}

/** What every page route shares: its context, the query it reads, the HTML answer and the redirect after a form. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../common/errors.js';
import { isValidName } from '../../common/names.js';
import type { UiDeps } from './deps.js';
import type { PageContext } from './layout.js';

/** The signed-in actor, CSRF token and path of a request (built by plugin.ts). */
export type ContextOf = (req: FastifyRequest, reply: FastifyReply) => PageContext;

/** Query or form fields, each reduced to its first value (plugin.ts's preValidation hook). */
export type Query = Record<string, string | undefined>;

/** One page module's routes, registered inside the session-guarded scope of plugin.ts. */
export type PageRoutes = (app: FastifyInstance, deps: UiDeps, context: ContextOf) => void;

export function send(reply: FastifyReply, body: string): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body);
}

/** Back to a page with a one-line notice (Post/Redirect/Get, so a reload does not repeat the action). */
export function done(reply: FastifyReply, to: string, notice: string): FastifyReply {
  return reply.redirect(`${to}${to.includes('?') ? '&' : '?'}notice=${encodeURIComponent(notice)}`, 303);
}

/** The notice a redirect from `done` carries. */
export function noticeOf(req: FastifyRequest): string | undefined {
  return (req.query as Query).notice;
}

/** A path or form field that must follow the name rule. */
export function name(value: string | undefined, what: string): string {
  if (!isValidName(value)) throw new SvcError('SVC_ERR_INVALID_NAME', `invalid ${what}`);
  return value;
}

/**
 * The management UI under /ui: its own login (the API-key gate does not apply, and --no-auth does not
 * open it), server-side sessions, CSRF tokens on every state-changing form, a strict
 * Content-Security-Policy, and the pages. Every action calls the app/ use cases the CLI calls.
 */
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { csrfSigningKey, login, logout, resumeSession, type UiSession } from '../../app/accounts/ui-accounts.js';
import { SvcError } from '../../common/errors.js';
import type { UiDeps } from './deps.js';
import { registerFormBody } from './form-body.js';
import { frame, type PageContext } from './layout.js';
import { refreshOf } from './auto-refresh.js';
import type { Query } from './respond.js';
import { html } from './html.js';
import { registerPages } from './pages/index.js';
import { STYLESHEET } from './styles.js';

export const SESSION_COOKIE = 'svc_ui';

declare module 'fastify' {
  interface FastifyRequest {
    uiSession?: UiSession;
  }
}

const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
});

/** HTTPS as the client saw it: a proxy's X-Forwarded-Proto (TLS ends in front of us). */
function overHttps(req: FastifyRequest): boolean {
  const forwarded = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase();
  return first === 'https' || req.protocol === 'https';
}

function cookieOptions(req: FastifyRequest) {
  return { path: '/ui', httpOnly: true, sameSite: 'strict' as const, secure: overHttps(req) };
}

export interface UiRoutesOptions {
  /** `request_body_timeout_secs` in milliseconds: the time a form body has to arrive. @default DEFAULT_BODY_TIMEOUT_MS */
  readonly bodyTimeoutMs?: number;
}

/** Registers the UI as an encapsulated plugin; mount it with `{ prefix: '/ui' }`. */
export function uiRoutes(deps: UiDeps, opts: UiRoutesOptions = {}) {
  return async function uiPlugin(app: FastifyInstance): Promise<void> {
    await app.register(fastifyCookie);
    registerFormBody(app, opts.bodyTimeoutMs);
    const hmacKey = await csrfSigningKey(deps.accounts);
    await app.register(fastifyCsrf, {
      sessionPlugin: '@fastify/cookie',
      cookieKey: 'svc_ui_csrf',
      cookieOpts: { path: '/ui', httpOnly: true, sameSite: 'strict' },
      // Tokens are bound to the session: a token from another session (or none) is refused.
      csrfOpts: { userInfo: true, hmacKey },
      getUserInfo: (req) => req.uiSession?.token ?? 'anonymous',
      getToken: (req) => (req.body as Record<string, string> | undefined)?._csrf,
    });

    app.addHook('onSend', async (_req, reply) => {
      reply.headers(SECURITY_HEADERS);
    });
    app.addHook('onRequest', async (req) => {
      const token = req.cookies[SESSION_COOKIE];
      const session = await resumeSession(deps.accounts, token, deps.timeouts);
      if (session !== undefined) req.uiSession = session;
    });
    // Pages read each query and form field as one string, but a repeated one (?flow=a&flow=b)
    // arrives as an array, and one reached the event-log query as two bind values (a 500, found by
    // the HTTP fuzzer). The first value counts, before the CSRF check and the pages read them.
    app.addHook('preValidation', async (req) => {
      req.query = firstValues(req.query);
      if (req.body !== null && typeof req.body === 'object') req.body = firstValues(req.body);
    });

    app.setErrorHandler((err, req, reply) => {
      const status = err instanceof SvcError ? err.status : ((err as { statusCode?: number }).statusCode ?? 500);
      const known = err instanceof SvcError || (status >= 400 && status < 500);
      if (!known) deps.log.error({ err, url: req.url }, 'UI request failed');
      const message =
        status === 403 && !(err instanceof SvcError)
          ? 'forbidden: the form was stale or forged (missing or wrong CSRF token); reload the page and try again'
          : known
            ? (err as Error).message
            : 'internal error';
      return reply
        .code(status)
        .type('text/html; charset=utf-8')
        .send(
          frame(
            'Error',
            html`<main>
              <h1>${status}</h1>
              <div class="error" role="alert">${message}</div>
              <p><a href="/ui">Back to the overview</a></p>
            </main>`,
          ),
        );
    });

    app.get('/assets/ui.css', async (_req, reply) => reply.type('text/css; charset=utf-8').send(STYLESHEET));

    app.get('/login', async (req, reply) => {
      if (req.uiSession !== undefined) return reply.redirect('/ui', 303);
      return reply
        .type('text/html; charset=utf-8')
        .send(loginPage(reply.generateCsrf({ userInfo: 'anonymous', ...cookieOptions(req) }), undefined));
    });

    app.post('/login', { preHandler: app.csrfProtection }, async (req, reply) => {
      const body = (req.body ?? {}) as Record<string, string>;
      try {
        const session = await login(deps.accounts, deps.throttle, {
          username: String(body.username ?? ''),
          password: String(body.password ?? ''),
          address: req.ip,
        });
        // A fresh session id at every login; the old cookie, if any, is replaced.
        await logout(deps.accounts, req.cookies[SESSION_COOKIE]);
        reply.setCookie(SESSION_COOKIE, session.token, cookieOptions(req));
        return reply.redirect('/ui', 303);
      } catch (err) {
        if (!(err instanceof SvcError)) throw err;
        if (err.headers !== undefined) reply.headers(err.headers);
        return reply
          .code(err.status)
          .type('text/html; charset=utf-8')
          .send(loginPage(reply.generateCsrf({ userInfo: 'anonymous', ...cookieOptions(req) }), err.message));
      }
    });

    app.post('/logout', { preHandler: [requireSession, app.csrfProtection] }, async (req, reply) => {
      await logout(deps.accounts, req.cookies[SESSION_COOKIE]);
      reply.clearCookie(SESSION_COOKIE, { path: '/ui' });
      return reply.redirect('/ui/login', 303);
    });

    // Every other route needs a session; a state change also needs the session's CSRF token.
    await app.register(async (pages) => {
      pages.addHook('preHandler', requireSession);
      pages.addHook('preHandler', (req, reply, done) =>
        req.method === 'POST' ? app.csrfProtection(req, reply, done) : done(),
      );
      // A form's answer leaves once this node's reads see what it changed (see UiDeps.caughtUp).
      pages.addHook('onSend', async (req, _reply, payload) => {
        if (req.method !== 'POST') return payload;
        try {
          await deps.caughtUp();
        } catch (err) {
          deps.log.warn({ err }, 'the registry copy did not catch up after a UI change (it will at its next round)');
        }
        return payload;
      });
      const context = (req: FastifyRequest, reply: FastifyReply): PageContext => ({
        actor: { role: req.uiSession!.user.role, name: `ui:${req.uiSession!.user.username}` },
        csrf: reply.generateCsrf({ userInfo: req.uiSession!.token, ...cookieOptions(req) }),
        path: req.url.split('?', 1)[0]!.replace(/\/$/, '') || '/ui',
        query: req.query as Query,
        refresh: refreshOf((req.query as Query).refresh),
      });
      registerPages(pages, deps, context);
    });
  };
}

/** Query or form fields with each repeated field reduced to its first value (a null-prototype object, as Fastify's own). */
function firstValues(fields: unknown): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(fields ?? {})) {
    const first: unknown = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[name] = first;
  }
  return out;
}

async function requireSession(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (req.uiSession === undefined) {
    if (req.method === 'GET') return reply.redirect('/ui/login', 303);
    throw new SvcError('SVC_ERR_UNAUTHORIZED', 'your session has ended; log in again');
  }
}

function loginPage(csrf: string, error: string | undefined): string {
  return frame(
    'Log in',
    html`<div class="login">
      <h1>svc · log in</h1>
      ${error === undefined ? '' : html`<div class="error" role="alert">${error}</div>`}
      <form method="post" action="/ui/login" class="stack">
        <input type="hidden" name="_csrf" value="${csrf}" />
        <label>Username <input name="username" autocomplete="username" required /></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" required /></label>
        <button type="submit">Log in</button>
      </form>
    </div>`,
  );
}

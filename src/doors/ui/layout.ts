/** The page frame: navigation by role, the signed-in user, logout; and the small pieces every page uses. */
import { can, type Actor, type Permission } from '../../app/accounts/roles.js';
import { refreshHref, refreshSwitch } from './auto-refresh.js';
import { html, type Html } from './html.js';

export interface PageContext {
  readonly actor: Actor;
  /** CSRF token for this session's forms. */
  readonly csrf: string;
  /** The path of the page, to mark the current tab. */
  readonly path: string;
  /** The page's query fields (the auto-refresh switch keeps them). */
  readonly query: Readonly<Record<string, string | undefined>>;
  /** Seconds between reloads when the page asked for them (`?refresh=`); undefined: off (auto-refresh.ts). */
  readonly refresh: number | undefined;
}

const NAV: ReadonlyArray<readonly [string, string, Permission]> = [
  ['/ui', 'Overview', 'read'],
  ['/ui/registry', 'Registry', 'read'],
  ['/ui/executions', 'Executions', 'read'],
  ['/ui/traces', 'Traces', 'read_traces'],
  ['/ui/replay', 'Replay', 'read_traces'],
  ['/ui/queues', 'Queues', 'read'],
  ['/ui/tenants', 'Tenants', 'manage_tenants'],
  ['/ui/keys', 'Keys', 'manage_keys'],
  ['/ui/audit', 'Audit', 'read'],
  ['/ui/certificates', 'Certificates', 'read'],
  ['/ui/settings', 'Settings', 'read'],
  ['/ui/users', 'Users', 'manage_ui_users'],
];

export function page(title: string, ctx: PageContext, body: Html, notice?: string): string {
  const nav = NAV.filter(([, , p]) => can(ctx.actor, p)).map(
    ([href, label]) => html`<a href="${href}" class="${ctx.path === href ? 'on' : ''}">${label}</a>`,
  );
  return frame(
    title,
    html`<header>
        <span class="brand">svc</span>${nav}
        <form method="post" action="/ui/logout">
          <input type="hidden" name="_csrf" value="${ctx.csrf}" /><span class="who"
            >${ctx.actor.name} (${ctx.actor.role})</span
          >
          <button type="submit">Log out</button>
        </form>
      </header>
      <main>
        <h1>${title}</h1>
        ${refreshSwitch(ctx.path, ctx.query, ctx.refresh)}
        ${notice === undefined ? '' : html`<div class="notice" role="status">${notice}</div>`}${body}
      </main>`,
    ctx.refresh === undefined ? undefined : { secs: ctx.refresh, href: refreshHref(ctx.path, ctx.query, ctx.refresh) },
  );
}

/** `reload`: the page reloads itself at `href` every `secs` seconds (no script: a meta refresh). */
export function frame(title: string, content: Html, reload?: { secs: number; href: string }): string {
  const refresh =
    reload === undefined ? '' : html`<meta http-equiv="refresh" content="${`${reload.secs}; url=${reload.href}`}" />`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${refresh}
        <title>${title} · svc</title>
        <link rel="stylesheet" href="/ui/assets/ui.css" />
      </head>
      <body>
        ${content}
      </body>
    </html>`.text;
}

/** A form posting to `action` with the session's CSRF token. */
export function postForm(ctx: PageContext, action: string, fields: Html, button: string, cls = 'inline'): Html {
  return html`<form method="post" action="${action}" class="${cls}">
    <input type="hidden" name="_csrf" value="${ctx.csrf}" />${fields}<button type="submit">${button}</button>
  </form>`;
}

export function hidden(name: string, value: string | number): Html {
  return html`<input type="hidden" name="${name}" value="${String(value)}" />`;
}

/** A column heading: its text, or its text and a tooltip saying what the column counts. */
export type Header = string | { readonly label: string; readonly title: string };

/**
 * A table in a box of its own that scrolls sideways when the table is wider than the screen (a
 * phone), so the page itself never does.
 */
export function scrollBox(content: Html): Html {
  return html`<div class="scroll">${content}</div>`;
}

export function table(headers: readonly Header[], rows: readonly Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return scrollBox(
    html`<table>
      <thead>
        <tr>
          ${headers.map((h) => (typeof h === 'string' ? html`<th>${h}</th>` : html`<th title="${h.title}">${h.label}</th>`))}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>`,
  );
}

export function json(value: unknown): string {
  return value === undefined ? '' : JSON.stringify(value, null, 2);
}

/**
 * Opt-in auto-refresh of a page (`?refresh=5` or `?refresh=30`), off by default: the page reloads
 * itself through a `<meta http-equiv="refresh">`, which needs no script, so it works under the
 * Content-Security-Policy (script-src 'self', no inline script) and with JavaScript off. The switch
 * is a pair of links that keep the page's other query fields (never a one-off `notice`).
 */
import { SvcError } from '../../common/errors.js';
import { html, type Html } from './html.js';

/** The intervals offered, in seconds. */
export const REFRESH_SECONDS = [5, 30] as const;

/**
 * The interval a query asks for; undefined when it asks for none.
 * @throws SvcError SVC_ERR_INVALID_INPUT for any other value, naming the ones there are
 */
export function refreshOf(value: string | undefined): number | undefined {
  if (value === undefined || value === '' || value === 'off') return undefined;
  const secs = REFRESH_SECONDS.find((s) => String(s) === value);
  if (secs === undefined)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `refresh must be off or one of ${REFRESH_SECONDS.join(', ')} (seconds)`,
    );
  return secs;
}

/** The page's own URL with `refresh` set to `secs` (or removed), its other fields kept but `notice`. */
export function refreshHref(path: string, query: Readonly<Record<string, string | undefined>>, secs?: number): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query))
    if (v !== undefined && k !== 'refresh' && k !== 'notice') params.set(k, v);
  if (secs !== undefined) params.set('refresh', String(secs));
  const qs = params.toString();
  return qs === '' ? path : `${path}?${qs}`;
}

/** The switch: the interval in force in bold, the others as links. */
export function refreshSwitch(
  path: string,
  query: Readonly<Record<string, string | undefined>>,
  current: number | undefined,
): Html {
  const choice = (label: string, secs: number | undefined): Html =>
    secs === current
      ? html`<b>${label}</b>`
      : html`<a href="${refreshHref(path, query, secs)}" rel="nofollow">${label}</a>`;
  return html`<p class="refresh">
    Auto-refresh: ${choice('off', undefined)} ·
    ${REFRESH_SECONDS.map((s, i) => html`${i === 0 ? '' : ' · '}${choice(`${s} s`, s)}`)}
  </p>`;
}

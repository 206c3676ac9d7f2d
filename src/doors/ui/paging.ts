/** Long lists shown 50 rows at a time, with links that keep the page's other query fields. */
import { SvcError } from '../../common/errors.js';
import { html, type Html } from './html.js';
import type { Query } from './respond.js';

export const PAGE_ROWS = 50;

/** One page of a list (50 rows) and the links to its neighbours, keeping the other query fields. */
export function paged<T>(rows: readonly T[], path: string, q: Query): { rows: readonly T[]; nav: Html } {
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
  const n = Math.min(pages, Math.max(1, Number.parseInt(q.page ?? '1', 10) || 1));
  const link = (to: number, label: string) =>
    html`<a href="${path}?${new URLSearchParams({ ...clean(q), page: String(to) }).toString()}">${label}</a>`;
  const nav =
    pages === 1
      ? html``
      : html`<p>
          Page ${n} of ${pages} (${rows.length} rows) ${n > 1 ? link(n - 1, 'Previous') : ''}
          ${n < pages ? link(n + 1, 'Next') : ''}
        </p>`;
  return { rows: rows.slice((n - 1) * PAGE_ROWS, n * PAGE_ROWS), nav };
}

/** The query's filter fields, without the paging cursors and the notice. */
export function clean(q: Query): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(q))
    if (v !== undefined && v !== '' && k !== 'before' && k !== 'notice' && k !== 'page') out[k] = v;
  return out;
}

/**
 * The `before` cursor of a list paged by id (the last id of the previous page); undefined when absent.
 * @throws SvcError SVC_ERR_INVALID_INPUT when it is not a whole number
 */
export function beforeCursor(q: Query): number | undefined {
  if (q.before === undefined || q.before === '') return undefined;
  if (!/^\d{1,15}$/.test(q.before))
    throw new SvcError('SVC_ERR_INVALID_INPUT', `before must be a row id (a whole number), got "${q.before}"`);
  return Number(q.before);
}

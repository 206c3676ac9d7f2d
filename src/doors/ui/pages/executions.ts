/** The Executions pages: the event log searched by field, and one delivery's story by correlation id. */
import { can } from '../../../app/accounts/roles.js';
import { replayedFrom } from '../../../app/runtime/dedup.js';
import {
  answeredStatuses,
  parseStatus,
  readLogFilter,
  searchableEventKinds,
  searchEvents,
  type LogFilter,
} from '../../../app/use-cases/event-search.js';
import { FAILED_RUN_STATUSES } from '../../../app/use-cases/overview.js';
import { SvcError } from '../../../common/errors.js';
import { filterField, filterForm, filterRefusal, filterSelect } from '../filters.js';
import { html, type Html } from '../html.js';
import { json, page, table } from '../layout.js';
import { deliveryLink, flowLink } from '../links.js';
import { beforeCursor, clean, PAGE_ROWS } from '../paging.js';
import { send, type PageRoutes, type Query } from '../respond.js';

type EventRow = Awaited<ReturnType<typeof searchEvents>>[number];

const EVENT_HEADERS = ['Time', 'Event', 'Tenant/flow', 'Step', 'Status', 'Outcome', 'Correlation id', 'Reason'];
const STORY_HEADERS = [
  'Time',
  'Event',
  'Flow',
  'Status',
  'Outcome',
  'Reason',
  'Payload (as log_level kept it, masked)',
];
/** The rows of one delivery shown at most. */
const STORY_ROWS = 1000;

/** The flows a delivery's rows name, each once, as links to their Registry pages. */
function flowsOf(rows: readonly EventRow[]): Html | string {
  const pairs = new Map<string, [string, string]>();
  for (const e of rows)
    if (e.tenant !== null && e.flow !== null) pairs.set(`${e.tenant}/${e.flow}`, [e.tenant, e.flow]);
  if (pairs.size === 0) return '';
  const links = [...pairs.values()].map(([t, f], i) => html`${i > 0 ? ', ' : ''}${flowLink(t, f)}`);
  return html`<p>Flow ${links} in the Registry (its versions and source).</p>`;
}

/** The reason; a replay's links the delivery whose answer it repeats. */
function reasonCell(e: EventRow): Html | string {
  if (e.reason === null) return '';
  const first = e.outcome === 'replayed' ? replayedFrom(e.reason) : undefined;
  if (first === undefined) return e.reason;
  return html`replayed the recorded answer of delivery ${deliveryLink(first)} (duplicate dedup_key); the flow did not
  run`;
}

function eventRow(e: EventRow): Html {
  return html`<tr>
    <td>${e.ts}</td>
    <td>${e.event}</td>
    <td>${e.tenant ?? ''}/${e.flow ?? ''}</td>
    <td>${e.step ?? ''}</td>
    <td class="num">${e.http_status ?? ''}</td>
    <td>${e.outcome ?? ''}</td>
    <td>${deliveryLink(e.correlation_id)}</td>
    <td>${reasonCell(e)}</td>
  </tr>`;
}

function storyRow(e: EventRow): Html {
  return html`<tr>
    <td>${e.ts}</td>
    <td>${e.event}</td>
    <td>${e.flow ?? ''}</td>
    <td class="num">${e.http_status ?? ''}</td>
    <td>${e.outcome ?? ''}</td>
    <td>${reasonCell(e)}</td>
    <td><pre>${json(e.payload)}</pre></td>
  </tr>`;
}

/** The status choices: the classes, what the Overview counts as failed, and each status the service answers. */
const STATUS_CHOICES: readonly (readonly [string, string])[] = [
  ['2xx', '2xx (success)'],
  ['4xx', '4xx (refused)'],
  ['5xx', '5xx (failed)'],
  [FAILED_RUN_STATUSES, `${FAILED_RUN_STATUSES} (failed runs, as the Overview counts them)`],
  ...answeredStatuses().map((n) => [String(n), String(n)] as const),
];

/** Whether a status written in the URL is one the search reads (then the form offers it as chosen). */
function readsAsStatus(text: string): boolean {
  try {
    parseStatus(text);
    return true;
  } catch {
    return false;
  }
}

function searchForm(q: Query): Html {
  const field = (n: string, label: string, placeholder?: string) => filterField(n, label, q[n], placeholder);
  return filterForm(
    [
      field('tenant', 'Tenant'),
      field('flow', 'Flow'),
      field('correlation_id', 'Correlation id'),
      filterSelect(
        'event',
        'Event kind',
        searchableEventKinds().map((k) => [k, k] as const),
        q.event,
      ),
      filterSelect('status', 'Status', STATUS_CHOICES, q.status, readsAsStatus),
      field('since', 'From (UTC)', '2026-01-31T08:00 or 1h'),
      field('until', 'To (UTC, inclusive)', '2026-01-31T09:30:15.250Z'),
    ],
    'Search',
  );
}

export const executionsPages: PageRoutes = (app, deps, context) => {
  app.get('/executions', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    let filter: LogFilter;
    let beforeId: number | undefined;
    try {
      filter = readLogFilter(q);
      beforeId = beforeCursor(q);
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      // A refused value searches nothing: dropping it would show more rows than were asked for.
      reply.code(err.status);
      return send(reply, page('Executions', ctx, html`${searchForm(q)}${filterRefusal(err.message)}`));
    }
    const rows = await searchEvents(deps.events, filter, {
      beforeId,
      limit: PAGE_ROWS,
    });
    const older = () => new URLSearchParams({ ...clean(q), before: String(rows.at(-1)!.id) }).toString();
    const next = rows.length === PAGE_ROWS ? html`<p><a href="/ui/executions?${older()}">Older rows</a></p>` : '';
    const body = html`${searchForm(q)} ${table(EVENT_HEADERS, rows.map(eventRow), 'No events match.')}${next}`;
    return send(reply, page('Executions', ctx, body));
  });

  app.get('/executions/:correlationId', async (req, reply) => {
    const ctx = context(req, reply);
    const { correlationId } = req.params as { correlationId: string };
    const rows = await searchEvents(deps.events, { correlation_id: correlationId }, { limit: STORY_ROWS });
    const story = rows.reverse().map(storyRow);
    const traces = can(ctx.actor, 'read_traces')
      ? html`<p>
          <a href="/ui/traces?correlation_id=${encodeURIComponent(correlationId)}">Trace rows of this delivery</a>
        </p>`
      : '';
    const body = html`${flowsOf(rows)}${traces}${table(STORY_HEADERS, story, 'No events for this correlation id.')}`;
    return send(reply, page(`Delivery ${correlationId}`, ctx, body));
  });
};

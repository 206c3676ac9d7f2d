/**
 * The Executions pages: the event log searched by field, as one row per delivery (the default) or
 * every row as written, and one delivery's story by correlation id.
 */
import { can } from '../../../app/accounts/roles.js';
import { replayedFrom } from '../../../app/runtime/dedup.js';
import {
  answeredStatuses,
  deliveryKind,
  deliveryOutcome,
  isTerminal,
  parseStatus,
  readLogFilter,
  readView,
  searchableEventKinds,
  searchDeliveries,
  searchEvents,
  type ExecutionsView,
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
const DELIVERY_HEADERS = [
  'Ended',
  'Tenant/flow',
  { label: 'Kind', title: 'run: /run, SOAP, gRPC or cron; queue: a queued message' },
  'Outcome',
  'Status',
  { label: 'Duration', title: "from the delivery's entry (a queued message's enqueue) to its end" },
  'Failing step',
  'Correlation id',
];
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

/**
 * A duration as an operator reads it: tenths of a millisecond under a second, tenths of a second
 * under a minute, else tenths of a minute; empty for a row that has none (written before it was kept).
 */
export function durationText(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${ms.toFixed(1)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** A delivery's outcome, marked good or bad at a glance. */
function outcomeBadge(e: EventRow): Html | string {
  const outcome = deliveryOutcome(e);
  if (outcome === '') return '';
  const bad = outcome === 'failed' || outcome === 'dead_lettered';
  const good = outcome === 'succeeded';
  return html`<span class="badge ${bad ? 'bad' : good ? 'good' : ''}">${outcome}</span>`;
}

function deliveryRow(e: EventRow): Html {
  return html`<tr>
    <td>${e.ts}</td>
    <td>${e.tenant !== null && e.flow !== null ? flowLink(e.tenant, e.flow) : ''}</td>
    <td>${deliveryKind(e)}</td>
    <td>${outcomeBadge(e)}</td>
    <td class="num">${e.http_status ?? ''}</td>
    <td class="num">${durationText(e.duration_ms)}</td>
    <td>${e.failed_step ?? ''}</td>
    <td>${deliveryLink(e.correlation_id)}</td>
  </tr>`;
}

/**
 * What a story's terminal rows say, one line each (a delivery that published to a queue has its
 * own and the published message's): outcome, status, duration and failing step.
 */
function summaryOf(rows: readonly EventRow[]): Html | string {
  const ends = rows.filter(isTerminal);
  if (ends.length === 0) return html`<p class="muted">Not ended yet, or ended before this log kept its rows.</p>`;
  const line = (e: EventRow) =>
    html`<li>
      ${e.tenant ?? ''}/${e.flow ?? ''} (${deliveryKind(e)}):
      ${outcomeBadge(e)}${e.http_status === null ? '' : html`, status ${e.http_status}`}${
        e.duration_ms === null || e.duration_ms === undefined ? '' : html`, ${durationText(e.duration_ms)}`
      }${e.failed_step === null || e.failed_step === undefined ? '' : html`, failing step <b>${e.failed_step}</b>`}
      <span class="muted">(ended ${e.ts})</span>
    </li>`;
  return html`<ul class="summary">
    ${ends.map(line)}
  </ul>`;
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

/** The search form of a view: the event kind is a filter of the rows view only (the deliveries are terminal rows). */
function searchForm(q: Query, view: ExecutionsView): Html {
  const field = (n: string, label: string, placeholder?: string) => filterField(n, label, q[n], placeholder);
  const kind =
    view === 'rows'
      ? [
          html`<input type="hidden" name="view" value="rows" />`,
          filterSelect(
            'event',
            'Event kind',
            searchableEventKinds().map((k) => [k, k] as const),
            q.event,
          ),
        ]
      : [];
  return filterForm(
    [
      field('tenant', 'Tenant'),
      field('flow', 'Flow'),
      field('correlation_id', 'Correlation id'),
      ...kind,
      filterSelect('status', 'Status', STATUS_CHOICES, q.status, readsAsStatus),
      field('since', 'From (UTC)', '2026-01-31T08:00 or 1h'),
      field('until', 'To (UTC, inclusive)', '2026-01-31T09:30:15.250Z'),
    ],
    'Search',
  );
}

/** The two views as tabs, each keeping the search's filters (the event kind only where it applies). */
function viewTabs(q: Query, view: ExecutionsView): Html {
  const { event, view: _view, ...kept } = clean(q);
  const link = (to: ExecutionsView, label: string) => {
    const params = new URLSearchParams(
      to === 'rows' ? { ...kept, view: 'rows', ...(event === undefined ? {} : { event }) } : kept,
    ).toString();
    return html`<a href="/ui/executions${params === '' ? '' : `?${params}`}" class="${to === view ? 'on' : ''}"
      >${label}</a
    >`;
  };
  return html`<nav class="tabs">${link('deliveries', 'Deliveries (one row each)')} ${link('rows', 'All rows')}</nav>`;
}

export const executionsPages: PageRoutes = (app, deps, context) => {
  app.get('/executions', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    let filter: LogFilter;
    let beforeId: number | undefined;
    let view: ExecutionsView = q.view === 'rows' ? 'rows' : 'deliveries';
    try {
      filter = readLogFilter(q);
      beforeId = beforeCursor(q);
      view = readView(q.view, q.event);
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      // A refused value searches nothing: dropping it would show more rows than were asked for.
      reply.code(err.status);
      const refused = html`${viewTabs(q, view)}${searchForm(q, view)}${filterRefusal(err.message)}`;
      return send(reply, page('Executions', ctx, refused));
    }
    const search = view === 'rows' ? searchEvents : searchDeliveries;
    const rows = await search(deps.events, filter, { beforeId, limit: PAGE_ROWS });
    const older = () => new URLSearchParams({ ...clean(q), before: String(rows.at(-1)!.id) }).toString();
    const next = rows.length === PAGE_ROWS ? html`<p><a href="/ui/executions?${older()}">Older rows</a></p>` : '';
    const listing =
      view === 'rows'
        ? table(EVENT_HEADERS, rows.map(eventRow), 'No events match.')
        : table(DELIVERY_HEADERS, rows.map(deliveryRow), 'No deliveries match.');
    const body = html`${viewTabs(q, view)}${searchForm(q, view)} ${listing}${next}`;
    return send(reply, page('Executions', ctx, body));
  });

  app.get('/executions/:correlationId', async (req, reply) => {
    const ctx = context(req, reply);
    const { correlationId } = req.params as { correlationId: string };
    const rows = await searchEvents(deps.events, { correlation_id: correlationId }, { limit: STORY_ROWS });
    const story = rows.reverse();
    const traces = can(ctx.actor, 'read_traces')
      ? html`<p>
          <a href="/ui/traces?correlation_id=${encodeURIComponent(correlationId)}">Trace rows of this delivery</a>
        </p>`
      : '';
    const summary = rows.length === 0 ? '' : summaryOf(story);
    const body = html`${summary}${flowsOf(rows)}${traces}${table(STORY_HEADERS, story.map(storyRow), 'No events for this correlation id.')}`;
    return send(reply, page(`Delivery ${correlationId}`, ctx, body));
  });
};

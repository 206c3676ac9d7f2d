/** The Executions pages: the event log searched by field, and one delivery's story by correlation id. */
import { can } from '../../../app/accounts/roles.js';
import { replayedFrom } from '../../../app/runtime/dedup.js';
import { searchEvents } from '../../../app/use-cases/event-search.js';
import { filterField, filterForm } from '../filters.js';
import { html, type Html } from '../html.js';
import { json, page, table } from '../layout.js';
import { clean, PAGE_ROWS } from '../paging.js';
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

function deliveryLink(correlationId: string | null): Html | string {
  if (correlationId === null) return '';
  return html`<a href="/ui/executions/${encodeURIComponent(correlationId)}">${correlationId}</a>`;
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

export const executionsPages: PageRoutes = (app, deps, context) => {
  app.get('/executions', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    const status = q.status ? Number(q.status) : undefined;
    const filter = {
      tenant: q.tenant || undefined,
      flow: q.flow || undefined,
      event: q.event || undefined,
      correlation_id: q.correlation_id || undefined,
      http_status: Number.isInteger(status) ? status : undefined,
      since: q.since || undefined,
      until: q.until || undefined,
    };
    const rows = await searchEvents(deps.events, filter, {
      beforeId: q.before ? Number(q.before) : undefined,
      limit: PAGE_ROWS,
    });
    const field = (n: string, label: string) => filterField(n, label, q[n]);
    const older = () => new URLSearchParams({ ...clean(q), before: String(rows.at(-1)!.id) }).toString();
    const next = rows.length === PAGE_ROWS ? html`<p><a href="/ui/executions?${older()}">Older rows</a></p>` : '';
    const form = filterForm(
      [
        field('tenant', 'Tenant'),
        field('flow', 'Flow'),
        field('correlation_id', 'Correlation id'),
        field('event', 'Event kind'),
        field('status', 'Status'),
        field('since', 'From (UTC, e.g. 2026-01-31T08:00)'),
        field('until', 'To (UTC)'),
      ],
      'Search',
    );
    const body = html`${form} ${table(EVENT_HEADERS, rows.map(eventRow), 'No events match.')}${next}`;
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
    const body = html`${traces}${table(STORY_HEADERS, story, 'No events for this correlation id.')}`;
    return send(reply, page(`Delivery ${correlationId}`, ctx, body));
  });
};

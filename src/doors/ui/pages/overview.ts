/** The Overview page: counts, this server's facts, the queues. */
import { FAILED_RUN_STATUSES, serviceOverview } from '../../../app/use-cases/overview.js';
import { html, type Html } from '../html.js';
import { page, scrollBox } from '../layout.js';
import { queueTable } from '../queue-table.js';
import { activityBlock, busiestBlock } from '../activity-block.js';
import { noticeOf, send, type PageRoutes } from '../respond.js';
import type { UiDeps } from '../deps.js';

/** A counter; with `href`, a link to the rows it counts. */
function card(label: string, value: string | number, href?: string): Html {
  return href === undefined
    ? html`<div class="card"><b>${value}</b>${label}</div>`
    : html`<a class="card" href="${href}"><b>${value}</b>${label}</a>`;
}

/** The Executions page searching the last hour's rows of one kind (and statuses). */
function lastHourRows(since: string, event: string, status?: string): string {
  const q = new URLSearchParams({ event, ...(status === undefined ? {} : { status }), since });
  return `/ui/executions?${q.toString()}`;
}

function factRow(label: string, value: string): Html {
  return html`<tr>
    <th>${label}</th>
    <td>${value}</td>
  </tr>`;
}

function facts(f: UiDeps['facts']): Html {
  const rows: ReadonlyArray<readonly [string, string]> = [
    ['State directory', f.stateDir],
    ['Signature', f.signature ? 'required (X-Svc-Signature)' : 'disabled'],
    ['API keys', f.apiKeys ? 'required' : 'DISABLED (--no-auth)'],
    ['Health', 'ok'],
  ];
  return scrollBox(
    html`<table>
      <tbody>
        ${rows.map(([label, value]) => factRow(label, value))}
      </tbody>
    </table>`,
  );
}

export const overviewPage: PageRoutes = (app, deps, context) => {
  app.get('/', async (req, reply) => {
    const ctx = context(req, reply);
    const o = await serviceOverview(deps);
    const hour = o.lastHour;
    const since = o.lastHourSince;
    // Each counter of rows links to the search that lists the same rows (test/ui-executions.test.ts).
    const cards: ReadonlyArray<readonly [string, number, string?]> = [
      ['tenants', o.tenants],
      ['flows', o.flows],
      ['API keys', o.keys],
      ['queues', o.queues.length],
      ['dead letters', o.queues.reduce((n, q) => n + q.deadLettersPending, 0), '/ui/queues#dead-letters'],
      ['uptime (s)', Math.round((Date.now() - deps.facts.startedAt) / 1000)],
      ['runs, last hour', hour.byEvent.completed ?? 0, lastHourRows(since, 'completed')],
      ['failed runs, last hour', hour.failedCompletions, lastHourRows(since, 'completed', FAILED_RUN_STATUSES)],
      [
        'queue messages processed, last hour',
        hour.byEvent.queue_processed ?? 0,
        lastHourRows(since, 'queue_processed'),
      ],
      ['queue messages filtered, last hour', hour.byEvent.queue_filtered ?? 0, lastHourRows(since, 'queue_filtered')],
      ['queue attempts failed, last hour', hour.byEvent.queue_failed ?? 0, lastHourRows(since, 'queue_failed')],
    ];
    const body = html`<div class="cards">${cards.map(([label, value, href]) => card(label, value, href))}</div>
      <h2>Activity</h2>
      ${await activityBlock(deps.events, {}, 'All flows')}
      <h2>Busiest flows, last hour</h2>
      ${await busiestBlock(deps.events)}
      <h2>This server</h2>
      ${facts(deps.facts)}
      <h2>Queues</h2>
      ${queueTable(o.queues)}`;
    return send(reply, page('Overview', ctx, body, noticeOf(req)));
  });
};

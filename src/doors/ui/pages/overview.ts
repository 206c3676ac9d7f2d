/** The Overview page: counts, this server's facts, the queues. */
import { serviceOverview } from '../../../app/use-cases/overview.js';
import { html, type Html } from '../html.js';
import { page, scrollBox } from '../layout.js';
import { queueTable } from '../queue-table.js';
import { activityBlock, busiestBlock } from '../activity-block.js';
import { noticeOf, send, type PageRoutes } from '../respond.js';
import type { UiDeps } from '../deps.js';

function card(label: string, value: string | number): Html {
  return html`<div class="card"><b>${value}</b>${label}</div>`;
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
    const cards: ReadonlyArray<readonly [string, number]> = [
      ['tenants', o.tenants],
      ['flows', o.flows],
      ['API keys', o.keys],
      ['queues', o.queues.length],
      ['dead letters', o.queues.reduce((n, q) => n + q.deadLettersPending, 0)],
      ['uptime (s)', Math.round((Date.now() - deps.facts.startedAt) / 1000)],
      ['runs, last hour', hour.byEvent.completed ?? 0],
      ['failed runs, last hour', hour.failedCompletions],
      ['queue messages processed, last hour', o.queueProcessedLastHour],
      ['queue attempts failed, last hour', hour.byEvent.queue_failed ?? 0],
    ];
    const body = html`<div class="cards">${cards.map(([label, value]) => card(label, value))}</div>
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

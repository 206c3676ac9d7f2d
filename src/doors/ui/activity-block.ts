/** The activity charts the Overview and a flow's page share, and the Overview's busiest flows with their sparklines. */
import { activity, activityCharts, busiestFlows, flowSparkline } from '../../app/use-cases/activity.js';
import type { EventLogStore } from '../../store/contracts/index.js';
import { html, raw, type Html } from './html.js';
import { table } from './layout.js';

const EMPTY =
  'Nothing ran in the last day yet. Deliveries, failures and latency appear here per minute and per hour as flows run (counted every minute, at most 5 s behind; a server started with --no-rollups counts none).';

/**
 * The last hour per minute and the last day per hour, of one flow or all (our own SVG documents,
 * every text in them escaped); a sentence saying what will appear when nothing ran in the day.
 */
export async function activityBlock(
  events: EventLogStore,
  scope: { readonly tenant?: string; readonly flow?: string },
  what: string,
): Promise<Html> {
  const hour = await activity(events, scope, 'minute');
  const day = await activity(events, scope, 'hour');
  if (day.points.every((p) => p.count === 0) && hour.points.every((p) => p.count === 0))
    return html`<p class="muted" id="activity-empty">${EMPTY}</p>`;
  const h = activityCharts(hour, what);
  const d = activityCharts(day, what);
  return html`<div class="charts" id="activity">
    ${raw(h.deliveries)}${raw(h.latency)}${raw(d.deliveries)}${raw(d.latency)}
  </div>`;
}

/** The busiest flows of the last hour, each linked to its page, with a sparkline per minute. */
export async function busiestBlock(events: EventLogStore): Promise<Html> {
  const flows = await busiestFlows(events);
  const rows = flows.map(
    (f) =>
      html`<tr>
        <td><a href="/ui/registry/${f.tenant}/${f.flow}">${f.tenant}/${f.flow}</a></td>
        <td class="num">${f.count}</td>
        <td class="num">${f.failures}</td>
        <td>${raw(flowSparkline(f))}</td>
      </tr>`,
  );
  return table(
    ['Flow', 'Deliveries', 'Failures', 'Per minute'],
    rows,
    'No flow ran in the last hour; the busiest appear here, with a sparkline each.',
  );
}

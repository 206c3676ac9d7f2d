/** The Traces page (support only; readTraceRows gives other roles no rows anyway): trace rows by flow or delivery. */
import { requirePermission } from '../../../app/accounts/roles.js';
import { isEntryRow } from '../../../app/testing/recorded-example.js';
import { readTraceRows, recordedExample } from '../../../app/use-cases/trace.js';
import { SvcError } from '../../../common/errors.js';
import type { StoredEvent } from '../../../store/contracts/index.js';
import { filterField, filterForm } from '../filters.js';
import { html, type Html } from '../html.js';
import { json, page, table } from '../layout.js';
import { deliveryLink } from '../links.js';
import { name, send, type PageRoutes, type Query } from '../respond.js';

const TRACE_HEADERS = ['Time', 'Event', 'Flow', 'Correlation id', 'Step / label', 'Status', 'Payload (masked)'];
/** Trace rows shown at most. */
const TRACE_ROWS = 500;

export const tracesPage: PageRoutes = (app, deps, context) => {
  app.get('/traces', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'read_traces', 'read trace rows');
    const q = req.query as Query;
    const filter = {
      tenant: q.tenant || undefined,
      flow: q.flow || undefined,
      correlation_id: q.correlation_id || undefined,
      limit: TRACE_ROWS,
    };
    const rowsFound = await readTraceRows(deps.events, filter, ctx.actor);
    const rows = rowsFound.map(
      (e) =>
        html`<tr>
          <td>${e.ts}</td>
          <td>${e.event}</td>
          <td>${e.flow ?? ''}</td>
          <td>${deliveryLink(e.correlation_id)}</td>
          <td>${e.step ?? ''}</td>
          <td class="num">${e.http_status ?? ''}</td>
          <td><pre>${json(e.payload)}</pre></td>
        </tr>`,
    );
    const field = (n: string, label: string) => filterField(n, label, q[n]);
    const form = filterForm(
      [field('tenant', 'Tenant'), field('flow', 'Flow'), field('correlation_id', 'Correlation id')],
      'Show',
    );
    const body = html`${form} ${exampleLinks(filter.correlation_id, rowsFound)}
    ${table(TRACE_HEADERS, rows, 'No trace rows match.')}`;
    return send(reply, page('Traces', ctx, body));
  });

  // One delivery's trace as a svc test example: a download (nothing changes, so a plain GET).
  app.get('/traces/example', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'read_traces', 'read trace rows');
    const q = req.query as Query;
    const tenant = name(q.tenant, 'tenant');
    const flow = name(q.flow, 'flow');
    const correlationId = q.correlation_id ?? '';
    if (correlationId === '') throw new SvcError('SVC_ERR_INVALID_INPUT', 'correlation_id is required');
    const text = await recordedExample(deps.events, { tenant, flow, correlationId }, ctx.actor);
    return reply
      .type('text/markdown; charset=utf-8')
      .header('content-disposition', `attachment; filename="${flow}.test.md"`)
      .header('x-content-type-options', 'nosniff')
      .send(text);
  });
};

/**
 * For the trace of one delivery: a download of it as an example of each flow it entered by a door
 * (docs/testing.md). Only the flows whose entry row is there: a called flow has none.
 */
function exampleLinks(correlationId: string | undefined, rows: readonly StoredEvent[]): Html | string {
  if (correlationId === undefined) return '';
  const entered = [...new Set(rows.filter(isEntryRow).map((r) => `${r.tenant}/${r.flow}`))];
  if (entered.length === 0) return '';
  const links = entered.map((key) => {
    const [tenant, flow] = key.split('/') as [string, string];
    const query = new URLSearchParams({ tenant, flow, correlation_id: correlationId }).toString();
    return html`<li>
      <a href="/ui/traces/example?${query}" download="${flow}.test.md">Save as an example of ${key} (.test.md)</a>
    </li>`;
  });
  return html`<ul class="actions">
    ${links}
  </ul>`;
}

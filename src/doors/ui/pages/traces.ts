/** The Traces page (support only; readTraceRows gives other roles no rows anyway): trace rows by flow or delivery. */
import { requirePermission } from '../../../app/accounts/roles.js';
import { readTraceRows } from '../../../app/use-cases/trace.js';
import { filterField, filterForm } from '../filters.js';
import { html } from '../html.js';
import { json, page, table } from '../layout.js';
import { send, type PageRoutes, type Query } from '../respond.js';

const TRACE_HEADERS = ['Time', 'Event', 'Flow', 'Step / label', 'Status', 'Payload (masked)'];
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
    const rows = (await readTraceRows(deps.events, filter, ctx.actor)).map(
      (e) =>
        html`<tr>
          <td>${e.ts}</td>
          <td>${e.event}</td>
          <td>${e.flow ?? ''}</td>
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
    const body = html`${form} ${table(TRACE_HEADERS, rows, 'No trace rows match.')}`;
    return send(reply, page('Traces', ctx, body));
  });
};

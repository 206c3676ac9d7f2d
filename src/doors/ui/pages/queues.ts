/** The Queues page: counters and retries, and the dead letters with their replay and discard forms. */
import { can, requirePermission } from '../../../app/accounts/roles.js';
import {
  actOnDeadLetters,
  deadLettersToShow,
  discardDeadLetter,
  listDeadLetters,
  queueFigures,
  replayDeadLetter,
} from '../../../app/use-cases/dlq.js';
import { SvcError } from '../../../common/errors.js';
import { filterField, filterForm } from '../filters.js';
import { html, raw, type Html } from '../html.js';
import { queueActivity, queueChart } from '../../../app/use-cases/queue-activity.js';
import type { EventLogStore } from '../../../store/contracts/index.js';
import { flowLink } from '../links.js';
import { hidden, json, page, postForm, table, type PageContext } from '../layout.js';
import { paged } from '../paging.js';
import { queueTable } from '../queue-table.js';
import { done, name, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

type DeadLetter = Awaited<ReturnType<typeof deadLettersToShow>>[number];

const DEAD_HEADERS = ['Queue', 'Id', 'Attempts', 'Failed', 'Last error', 'Payload', ''];

/** Hidden fields naming a selection of queues: a tenant, a flow, both or none. */
function scopeFields(filter: { tenant?: string; flow?: string }): Html {
  const tenant = filter.tenant === undefined ? '' : hidden('tenant', filter.tenant);
  return html`${tenant}${filter.flow === undefined ? '' : hidden('flow', filter.flow)}`;
}

function deadLetterRow(ctx: PageContext, d: DeadLetter, act: boolean): Html {
  const ids = html`${hidden('tenant', d.tenant)}${hidden('flow', d.flow)}${hidden('id', d.id)}`;
  const actions = act
    ? html`${postForm(ctx, '/ui/queues/replay', ids, 'Replay')} ${postForm(ctx, '/ui/queues/discard', ids, 'Discard')}`
    : '';
  return html`<tr>
    <td>${flowLink(d.tenant, d.flow)}</td>
    <td class="num">${d.id}</td>
    <td class="num">${d.attempts}</td>
    <td>${d.failed_at}</td>
    <td>${d.last_error}</td>
    <td><pre>${json(d.payload)}</pre></td>
    <td>${actions}</td>
  </tr>`;
}

/** Queue charts shown at most (the table above lists every queue). */
const CHARTS_SHOWN = 12;

/** Each queue's last hour, drawn (our own SVG, every text escaped); a sentence when nothing was sampled yet. */
async function queueCharts(events: EventLogStore, scope: { tenant?: string; flow?: string }): Promise<Html> {
  const series = await queueActivity(events, scope);
  if (series.length === 0)
    return html`<p class="muted" id="queue-charts-empty">
      No queue figures in the last hour yet: each queue's backlog, deliveries processed per minute and dead letters
      appear here, sampled every 15 s while svc serve runs.
    </p>`;
  const more =
    series.length > CHARTS_SHOWN
      ? html`<p class="muted">
          The first ${CHARTS_SHOWN} of ${series.length} queues; filter by tenant or flow for the others.
        </p>`
      : '';
  return html`<div class="charts" id="queue-charts">
      ${series.slice(0, CHARTS_SHOWN).map((q) => raw(queueChart(q)))}
    </div>
    ${more}`;
}

export const queuesPages: PageRoutes = (app, deps, context) => {
  app.get('/queues', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    const filter = {
      // A value that is not a name is refused (400), never dropped for a wider listing.
      tenant: q.tenant ? name(q.tenant, 'tenant') : undefined,
      flow: q.flow ? name(q.flow, 'flow') : undefined,
    };
    const queues = await queueFigures(deps.queues, Date.now(), filter);
    const allDead = await deadLettersToShow(deps.queues, filter);
    const { rows: dead, nav } = paged(allDead, '/ui/queues', q);
    const act = can(ctx.actor, 'manage_dead_letters');
    const scope = scopeFields(filter);
    const n = allDead.length;
    const bulk =
      act && n > 0
        ? html`<p>
            ${postForm(ctx, '/ui/queues/replay-all', scope, `Replay all ${n} shown`)}
            ${postForm(ctx, '/ui/queues/discard-all', scope, `Discard all ${n} shown`)}
          </p>`
        : '';
    const picker = filterForm(
      [filterField('tenant', 'Tenant', filter.tenant), filterField('flow', 'Flow', filter.flow)],
      'Filter',
    );
    const rows = dead.map((d) => deadLetterRow(ctx, d, act));
    const body = html`${queueTable(queues)}
      <h2>Over the last hour</h2>
      ${await queueCharts(deps.events, filter)}
      <h2 id="dead-letters">Dead letters</h2>
      ${picker}${bulk}${table(DEAD_HEADERS, rows, 'No dead letters.')}${nav}`;
    return send(reply, page('Queues', ctx, body, noticeOf(req)));
  });

  for (const action of ['replay', 'discard'] as const) {
    app.post(`/queues/${action}`, async (req, reply) => {
      const ctx = context(req, reply);
      requirePermission(ctx.actor, 'manage_dead_letters', `${action} dead letters`);
      const b = req.body as Query;
      const tenant = name(b.tenant, 'tenant');
      const flow = name(b.flow, 'flow');
      const id = Number(b.id);
      if (!Number.isInteger(id)) throw new SvcError('SVC_ERR_INVALID_INPUT', 'invalid dead letter id');
      const audited = { audit: deps.audit, actor: ctx.actor.name };
      if (action === 'replay') {
        const r = await replayDeadLetter(deps.queues, tenant, flow, id, audited);
        deps.ensureWorker(tenant, flow);
        return done(reply, '/ui/queues', `replayed dead letter ${id} of ${tenant}/${flow} as message ${r.message.id}`);
      }
      await discardDeadLetter(deps.queues, tenant, flow, id, audited);
      return done(reply, '/ui/queues', `discarded dead letter ${id} of ${tenant}/${flow}`);
    });

    app.post(`/queues/${action}-all`, async (req, reply) => {
      const ctx = context(req, reply);
      requirePermission(ctx.actor, 'manage_dead_letters', `${action} dead letters`);
      const b = req.body as Query;
      const filter = {
        tenant: b.tenant ? name(b.tenant, 'tenant') : undefined,
        flow: b.flow ? name(b.flow, 'flow') : undefined,
      };
      const queues = new Set((await listDeadLetters(deps.queues, filter)).map((d) => `${d.tenant}/${d.flow}`));
      const n = await actOnDeadLetters(deps.queues, action, filter, { audit: deps.audit, actor: ctx.actor.name });
      if (action === 'replay') for (const q of queues) deps.ensureWorker(q.split('/')[0]!, q.split('/')[1]!);
      return done(reply, '/ui/queues', `${action === 'replay' ? 'replayed' : 'discarded'} ${n} dead letter(s)`);
    });
  }
};

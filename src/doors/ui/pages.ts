/** The UI's pages and forms. Each reads or acts through an app/ use case; what a role may do is app/roles.ts. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { latestAuditEntries, verifyAuditChain } from '../../app/use-cases/audit.js';
import {
  actOnDeadLetters,
  discardDeadLetter,
  listDeadLetters,
  queueFigures,
  replayDeadLetter,
  type QueueFigures,
} from '../../app/use-cases/dlq.js';
import { listCertificates } from '../../app/use-cases/certificates.js';
import {
  createApiKey,
  listApiKeys,
  parseFlows,
  parseRateLimit,
  parseScopes,
  revokeApiKey,
} from '../../app/use-cases/keys.js';
import { can, requirePermission } from '../../app/accounts/roles.js';
import { searchEvents } from '../../app/use-cases/event-search.js';
import { createTenant, disableTenant, enableTenant, listTenants } from '../../app/use-cases/tenants.js';
import { listTraceFlags, readTraceRows, setTraceFlag } from '../../app/use-cases/trace.js';
import { addUiUser, listUiUsers, setUiUserDisabled } from '../../app/accounts/ui-accounts.js';
import { SvcError } from '../../common/errors.js';
import { isValidName } from '../../common/names.js';
import type { UiDeps } from './deps.js';
import { html, type Html } from './html.js';
import { hidden, json, page, postForm, table, type PageContext } from './layout.js';
import type { StoredEvent } from '../../store/contracts/index.js';

type Ctx = (req: FastifyRequest, reply: FastifyReply) => PageContext;
type Query = Record<string, string | undefined>;

const PAGE_ROWS = 50;

function send(reply: FastifyReply, body: string): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body);
}

/** Back to a page with a one-line notice (Post/Redirect/Get, so a reload does not repeat the action). */
function done(reply: FastifyReply, to: string, notice: string): FastifyReply {
  return reply.redirect(`${to}${to.includes('?') ? '&' : '?'}notice=${encodeURIComponent(notice)}`, 303);
}

function name(value: string | undefined, what: string): string {
  if (!isValidName(value)) throw new SvcError('SVC_ERR_INVALID_NAME', `invalid ${what}`);
  return value;
}

function eventRows(rows: readonly StoredEvent[]): Html[] {
  return rows.map(
    (e) =>
      html`<tr>
        <td>${e.ts}</td>
        <td>${e.event}</td>
        <td>${e.tenant ?? ''}/${e.flow ?? ''}</td>
        <td>${e.step ?? ''}</td>
        <td class="num">${e.http_status ?? ''}</td>
        <td>${e.outcome ?? ''}</td>
        <td>
          ${e.correlation_id === null ? '' : html`<a href="/ui/executions/${encodeURIComponent(e.correlation_id)}">${e.correlation_id}</a>`}
        </td>
        <td>${e.reason ?? ''}</td>
      </tr>`,
  );
}
const EVENT_HEADERS = ['Time', 'Event', 'Tenant/flow', 'Step', 'Status', 'Outcome', 'Correlation id', 'Reason'];

export function registerPages(app: FastifyInstance, deps: UiDeps, context: Ctx): void {
  // ---- Overview
  app.get('/', async (req, reply) => {
    const ctx = context(req, reply);
    const tenants = await listTenants(deps.tenants);
    const flows = await deps.artifacts.listLatest();
    let keys = 0;
    for (const t of tenants) keys += (await deps.keys.list(t.id)).length;
    const queues = await queueFigures(deps.queues);
    const uptime = Math.round((Date.now() - deps.facts.startedAt) / 1000);
    const hour = await deps.events.countsSince(new Date(Date.now() - 3_600_000).toISOString());
    const card = (label: string, value: string | number) => html`<div class="card"><b>${value}</b>${label}</div>`;
    const body = html`<div class="cards">
        ${card('tenants', tenants.length)}${card('flows', flows.length)}${card('API keys', keys)}${card('queues', queues.length)}${card(
          'dead letters',
          queues.reduce((n, q) => n + q.deadLettersPending, 0),
        )}${card('uptime (s)', uptime)}${card('runs, last hour', hour.byEvent.completed ?? 0)}${card('failed runs, last hour', hour.failedCompletions)}${card('queue messages processed, last hour', hour.byEvent.queue_processed ?? 0)}${card('queue attempts failed, last hour', hour.byEvent.queue_failed ?? 0)}
      </div>
      <h2>This server</h2>
      <table>
        <tbody>
          <tr>
            <th>State directory</th>
            <td>${deps.facts.stateDir}</td>
          </tr>
          <tr>
            <th>Signature</th>
            <td>${deps.facts.signature ? 'required (X-Svc-Signature)' : 'disabled'}</td>
          </tr>
          <tr>
            <th>API keys</th>
            <td>${deps.facts.apiKeys ? 'required' : 'DISABLED (--no-auth)'}</td>
          </tr>
          <tr>
            <th>Health</th>
            <td>ok</td>
          </tr>
        </tbody>
      </table>
      <h2>Queues</h2>
      ${queueTable(queues)}`;
    return send(reply, page('Overview', ctx, body, (req.query as Query).notice));
  });

  // ---- Registry
  app.get('/registry', async (req, reply) => {
    const ctx = context(req, reply);
    const all = await deps.artifacts.listLatest();
    const { rows: flows, nav } = paged(all, '/ui/registry', req.query as Query);
    const flags = new Map((await listTraceFlags(deps.traces)).map((f) => [`${f.tenant}/${f.flow}`, f.enabled]));
    const tenants = (await listTenants(deps.tenants)).map(
      (t) =>
        html`<tr>
          <td>${t.id}</td>
          <td>${t.displayName}</td>
          <td>${t.status}</td>
          <td>${t.createdAt}</td>
        </tr>`,
    );
    const rows = flows.map(
      (f) =>
        html`<tr>
          <td>${f.tenant}</td>
          <td><a href="/ui/registry/${f.tenant}/${f.name}">${f.name}</a></td>
          <td>${f.version}</td>
          <td><code>${f.hash.slice(0, 12)}</code></td>
          <td>${f.created_at}</td>
          <td>${flags.get(`${f.tenant}/${f.name}`) === true ? 'on' : 'off'}</td>
        </tr>`,
    );
    const body = html`<h2>Tenants</h2>
      ${table(['Tenant', 'Display name', 'Status', 'Created'], tenants, 'No tenants.')}
      <h2>Flows (latest versions)</h2>
      ${table(['Tenant', 'Flow', 'Latest', 'Hash', 'Published', 'Tracing'], rows, 'No flow is deployed.')}${nav}`;
    return send(reply, page('Registry', ctx, body, (req.query as Query).notice));
  });

  app.get('/registry/:tenant/:flow', async (req, reply) => {
    const ctx = context(req, reply);
    const { tenant, flow } = req.params as { tenant: string; flow: string };
    name(tenant, 'tenant');
    name(flow, 'flow');
    const versions = await deps.artifacts.listVersions(tenant, flow);
    if (versions.length === 0) throw new SvcError('SVC_ERR_NOT_FOUND', `flow '${tenant}/${flow}' not found`);
    const latest = versions.find((v) => v.latest) ?? versions[0]!;
    const shown = versions.find((v) => v.version === (req.query as Query).version) ?? latest;
    const bytes = await deps.artifacts.getArtifact(shown.hash);
    const source = await deps.artifacts.getSource(tenant, flow, shown.version);
    const traced = (await listTraceFlags(deps.traces, tenant)).some((f) => f.flow === flow && f.enabled);
    const toggle = can(ctx.actor, 'toggle_trace')
      ? postForm(
          ctx,
          `/ui/registry/${tenant}/${flow}/trace`,
          hidden('enabled', traced ? '0' : '1'),
          traced ? 'Turn tracing off' : 'Turn tracing on',
        )
      : html`<span class="muted">(only a sysadmin may change it)</span>`;
    const rows = versions.map(
      (v) =>
        html`<tr>
          <td>
            <a href="/ui/registry/${tenant}/${flow}?version=${encodeURIComponent(v.version)}">${v.version}</a
            >${v.latest ? html` <span class="badge good">latest</span>` : ''}
          </td>
          <td><code>${v.hash}</code></td>
          <td>${v.created_at}</td>
        </tr>`,
    );
    const body = html`<p>Tracing: <b>${traced ? 'on' : 'off'}</b> ${toggle}</p>
      <h2>Versions</h2>
      ${table(['Version', 'Hash', 'Published'], rows, '')}
      <h2>Source of version ${shown.version}${shown.latest ? ' (latest)' : ''}</h2>
      ${source === undefined ? html`<p class="muted">Not kept: this version was deployed before sources were stored.</p>` : html`<pre id="flow-source">${source}</pre>`}
      <h2>Compiled flow (version ${shown.version})</h2>
      <pre>${bytes === undefined ? '' : json(JSON.parse(bytes.toString('utf8')))}</pre>`;
    return send(reply, page(`Flow ${tenant}/${flow}`, ctx, body, (req.query as Query).notice));
  });

  app.post('/registry/:tenant/:flow/trace', async (req, reply) => {
    const ctx = context(req, reply);
    const { tenant, flow } = req.params as { tenant: string; flow: string };
    const enabled = (req.body as Query).enabled === '1';
    const r = await setTraceFlag(
      { traces: deps.traces, tenants: deps.tenants, artifacts: deps.artifacts, audit: deps.audit },
      { tenant, flow, enabled },
      ctx.actor,
    );
    return done(
      reply,
      `/ui/registry/${tenant}/${flow}`,
      r.changed ? `tracing of ${tenant}/${flow} is now ${enabled ? 'on' : 'off'}` : 'nothing changed',
    );
  });

  // ---- Executions
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
    const field = (n: string, label: string) =>
      html`<label>${label}<input name="${n}" value="${q[n] ?? ''}" /></label>`;
    const next =
      rows.length === PAGE_ROWS
        ? html`<p>
            <a href="/ui/executions?${new URLSearchParams({ ...clean(q), before: String(rows.at(-1)!.id) }).toString()}"
              >Older rows</a
            >
          </p>`
        : '';
    const body = html`<form method="get" class="filters">
        ${field('tenant', 'Tenant')}${field('flow', 'Flow')}${field('correlation_id', 'Correlation id')}${field('event', 'Event kind')}${field('status', 'Status')}${field('since', 'From (UTC, e.g. 2026-01-31T08:00)')}${field('until', 'To (UTC)')}<button
          type="submit"
        >
          Search
        </button>
      </form>
      ${table(EVENT_HEADERS, eventRows(rows), 'No events match.')}${next}`;
    return send(reply, page('Executions', ctx, body));
  });

  app.get('/executions/:correlationId', async (req, reply) => {
    const ctx = context(req, reply);
    const { correlationId } = req.params as { correlationId: string };
    const rows = (await searchEvents(deps.events, { correlation_id: correlationId }, { limit: 1000 })).reverse();
    const story = rows.map(
      (e) =>
        html`<tr>
          <td>${e.ts}</td>
          <td>${e.event}</td>
          <td>${e.flow ?? ''}</td>
          <td class="num">${e.http_status ?? ''}</td>
          <td>${e.outcome ?? ''}</td>
          <td>${e.reason ?? ''}</td>
          <td><pre>${json(e.payload)}</pre></td>
        </tr>`,
    );
    const traces = can(ctx.actor, 'read_traces')
      ? html`<p>
          <a href="/ui/traces?correlation_id=${encodeURIComponent(correlationId)}">Trace rows of this delivery</a>
        </p>`
      : '';
    const body = html`${traces}${table(['Time', 'Event', 'Flow', 'Status', 'Outcome', 'Reason', 'Payload (as log_level kept it, masked)'], story, 'No events for this correlation id.')}`;
    return send(reply, page(`Delivery ${correlationId}`, ctx, body));
  });

  // ---- Traces (support only; readTraceRows gives other roles zero rows anyway)
  app.get('/traces', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'read_traces', 'read trace rows');
    const q = req.query as Query;
    const rows = await readTraceRows(
      deps.events,
      {
        tenant: q.tenant || undefined,
        flow: q.flow || undefined,
        correlation_id: q.correlation_id || undefined,
        limit: 500,
      },
      ctx.actor,
    );
    const out = rows.map(
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
    const field = (n: string, label: string) =>
      html`<label>${label}<input name="${n}" value="${q[n] ?? ''}" /></label>`;
    const body = html`<form method="get" class="filters">
        ${field('tenant', 'Tenant')}${field('flow', 'Flow')}${field('correlation_id', 'Correlation id')}<button
          type="submit"
        >
          Show
        </button>
      </form>
      ${table(['Time', 'Event', 'Flow', 'Step / label', 'Status', 'Payload (masked)'], out, 'No trace rows match.')}`;
    return send(reply, page('Traces', ctx, body));
  });

  // ---- Queues
  app.get('/queues', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    const filter = {
      tenant: q.tenant && isValidName(q.tenant) ? q.tenant : undefined,
      flow: q.flow && isValidName(q.flow) ? q.flow : undefined,
    };
    const queues = await queueFigures(deps.queues);
    const allDead = await listDeadLetters(deps.queues, filter);
    const { rows: dead, nav } = paged(allDead, '/ui/queues', q);
    const act = can(ctx.actor, 'manage_dead_letters');
    const scope = html`${filter.tenant === undefined ? '' : hidden('tenant', filter.tenant)}${filter.flow === undefined ? '' : hidden('flow', filter.flow)}`;
    const bulk =
      act && allDead.length > 0
        ? html`<p>
            ${postForm(ctx, '/ui/queues/replay-all', scope, `Replay all ${allDead.length} shown`)}
            ${postForm(ctx, '/ui/queues/discard-all', scope, `Discard all ${allDead.length} shown`)}
          </p>`
        : '';
    const picker = html`<form method="get" class="filters">
      <label>Tenant<input name="tenant" value="${filter.tenant ?? ''}" /></label
      ><label>Flow<input name="flow" value="${filter.flow ?? ''}" /></label><button type="submit">Filter</button>
    </form>`;
    const rows = dead.map((d) => {
      const ids = html`${hidden('tenant', d.tenant)}${hidden('flow', d.flow)}${hidden('id', d.id)}`;
      return html`<tr>
        <td>${d.tenant}/${d.flow}</td>
        <td class="num">${d.id}</td>
        <td class="num">${d.attempts}</td>
        <td>${d.failed_at}</td>
        <td>${d.last_error}</td>
        <td><pre>${json(d.payload)}</pre></td>
        <td>
          ${act ? html`${postForm(ctx, '/ui/queues/replay', ids, 'Replay')} ${postForm(ctx, '/ui/queues/discard', ids, 'Discard')}` : ''}
        </td>
      </tr>`;
    });
    const body = html`${queueTable(queues)}
      <h2>Dead letters</h2>
      ${picker}${bulk}${table(['Queue', 'Id', 'Attempts', 'Failed', 'Last error', 'Payload', ''], rows, 'No dead letters.')}${nav}`;
    return send(reply, page('Queues', ctx, body, (req.query as Query).notice));
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

  // ---- Tenants (sysadmin)
  app.get('/tenants', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_tenants', 'manage tenants');
    const rows = (await listTenants(deps.tenants)).map((t) => {
      const to = t.status === 'active' ? 'disabled' : 'active';
      return html`<tr>
        <td>${t.id}</td>
        <td>${t.displayName}</td>
        <td>${t.status}</td>
        <td>${t.createdAt}</td>
        <td>
          ${postForm(ctx, `/ui/tenants/${t.id}/status`, hidden('status', to), to === 'disabled' ? 'Disable' : 'Enable')}
        </td>
      </tr>`;
    });
    const create = postForm(
      ctx,
      '/ui/tenants',
      html`<label>Id <input name="id" required /></label
        ><label>Display name <input name="display_name" required /></label>`,
      'Register tenant',
      'filters',
    );
    return send(
      reply,
      page(
        'Tenants',
        ctx,
        html`${create}${table(['Tenant', 'Display name', 'Status', 'Created', ''], rows, 'No tenants.')}`,
        (req.query as Query).notice,
      ),
    );
  });

  app.post('/tenants', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_tenants', 'register tenants');
    const b = req.body as Query;
    const t = await createTenant(
      { tenantAdmin: deps.tenantAdmin },
      { id: String(b.id ?? ''), displayName: String(b.display_name ?? '') },
      { actor: ctx.actor.name },
    );
    return done(reply, '/ui/tenants', `registered tenant ${t.id}`);
  });

  app.post('/tenants/:id/status', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_tenants', 'disable or enable tenants');
    const id = name((req.params as { id: string }).id, 'tenant');
    const to = (req.body as Query).status;
    const stores = { tenantAdmin: deps.tenantAdmin };
    const r =
      to === 'disabled'
        ? await disableTenant(stores, id, { actor: ctx.actor.name })
        : await enableTenant(stores, id, { actor: ctx.actor.name });
    return done(reply, '/ui/tenants', r.changed ? `tenant ${id} is now ${r.tenant.status}` : 'nothing changed');
  });

  // ---- Keys (sysadmin)
  app.get('/keys', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_keys', 'manage API keys');
    const tenants = await listTenants(deps.tenants);
    const rows: Html[] = [];
    for (const t of tenants) {
      for (const k of await listApiKeys({ tenants: deps.tenants, keys: deps.keys }, t.id)) {
        rows.push(
          html`<tr>
            <td class="num">${k.row.id}</td>
            <td>${k.row.tenant}</td>
            <td>${k.row.label}</td>
            <td>${k.status}</td>
            <td>${k.row.scopes.join(', ')}</td>
            <td>${k.row.flows.join(', ') || 'all'}</td>
            <td>${k.row.expiresAt ?? 'never'}</td>
            <td>${k.status === 'revoked' ? '' : postForm(ctx, `/ui/keys/${k.row.id}/revoke`, html``, 'Revoke')}</td>
          </tr>`,
        );
      }
    }
    const create = postForm(
      ctx,
      '/ui/keys',
      html`<label
          >Tenant
          <select name="tenant">
            ${tenants.map((t) => html`<option>${t.id}</option>`)}
          </select></label
        ><label>Label <input name="label" required /></label
        ><label>Scopes <input name="scopes" placeholder="*" /></label
        ><label>Flows <input name="flows" placeholder="all" /></label
        ><label>Requests/s <input name="rate_limit" /></label>`,
      'Create key',
      'filters',
    );
    return send(
      reply,
      page(
        'Keys',
        ctx,
        html`${create}${table(['Id', 'Tenant', 'Label', 'Status', 'Scopes', 'Flows', 'Expires', ''], rows, 'No API keys.')}`,
        (req.query as Query).notice,
      ),
    );
  });

  app.post('/keys', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_keys', 'create API keys');
    const b = req.body as Query;
    const created = await createApiKey(
      { tenants: deps.tenants, keys: deps.keys },
      {
        tenant: String(b.tenant ?? ''),
        label: String(b.label ?? ''),
        scopes: b.scopes ? parseScopes(b.scopes) : undefined,
        flows: b.flows ? parseFlows(b.flows) : undefined,
        rateLimit: b.rate_limit ? parseRateLimit(b.rate_limit) : undefined,
      },
    );
    // Shown once, on this answer only (not through a redirect that could be reloaded or logged).
    const body = html`<div class="notice" role="status">
        Created key ${created.row.id} for ${created.row.tenant}. Copy it now: it is shown only this once.
      </div>
      <pre id="new-key">${created.rawKey}</pre>
      <p><a href="/ui/keys">Back to the keys</a></p>`;
    return send(reply, page('Keys', ctx, body));
  });

  app.post('/keys/:id/revoke', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_keys', 'revoke API keys');
    const id = Number((req.params as { id: string }).id);
    if (!Number.isInteger(id)) throw new SvcError('SVC_ERR_INVALID_INPUT', 'invalid key id');
    await revokeApiKey(deps.keys, id);
    return done(reply, '/ui/keys', `revoked API key ${id}`);
  });

  // ---- Audit
  app.get('/audit', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    const tenants = await listTenants(deps.tenants);
    const tenant = q.tenant && isValidName(q.tenant) ? q.tenant : tenants[0]?.id;
    const picker = html`<form method="get" class="filters">
      <label
        >Tenant
        <select name="tenant">
          ${tenants.map((t) => html`<option ${t.id === tenant ? 'selected' : ''}>${t.id}</option>`)}
        </select></label
      ><button type="submit">Show</button><button type="submit" name="verify" value="1">Verify the chain</button>
    </form>`;
    if (tenant === undefined) return send(reply, page('Audit', ctx, html`<p class="muted">No tenants.</p>`));
    const verified = q.verify === '1' ? await verifyAuditChain(deps.audit, tenant) : undefined;
    const result =
      verified === undefined
        ? ''
        : verified.ok
          ? html`<div class="notice" role="status">The chain of ${tenant} verifies: ${verified.count} entries.</div>`
          : html`<div class="error" role="alert">The chain of ${tenant} is broken at seq ${verified.brokenSeq}.</div>`;
    const listing = await latestAuditEntries(deps.audit, tenant, 100);
    const rows = listing.entries.map(
      (e) =>
        html`<tr>
          <td class="num">${e.seq}</td>
          <td>${e.eventType}</td>
          <td>${e.createdAt}</td>
          <td>${e.correlationId}</td>
          <td><pre>${e.payload}</pre></td>
        </tr>`,
    );
    return send(
      reply,
      page(
        'Audit',
        ctx,
        html`${picker}${result}
          <p class="muted">${listing.total} entries, newest first.</p>
          ${table(['Seq', 'Event', 'Created', 'Correlation id', 'Payload'], rows, 'No entries.')}`,
      ),
    );
  });

  // ---- UI users (sysadmin)
  app.get('/users', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_ui_users', 'manage UI users');
    const rows = (await listUiUsers(deps.accounts)).map((u) => {
      const to = u.disabled ? 'enable' : 'disable';
      return html`<tr>
        <td>${u.username}</td>
        <td>${u.role}</td>
        <td>${u.disabled ? 'disabled' : 'active'}</td>
        <td>${u.createdAt}</td>
        <td>
          ${postForm(ctx, `/ui/users/${encodeURIComponent(u.username)}/${to}`, html``, to === 'disable' ? 'Disable' : 'Enable')}
        </td>
      </tr>`;
    });
    const add = postForm(
      ctx,
      '/ui/users',
      html`<label>Username <input name="username" required /></label
        ><label
          >Role
          <select name="role">
            <option>developer</option>
            <option>support</option>
            <option>sysadmin</option>
          </select></label
        ><label>Password <input name="password" type="password" autocomplete="new-password" required /></label>`,
      'Add user',
      'filters',
    );
    return send(
      reply,
      page(
        'UI users',
        ctx,
        html`${add}${table(['Username', 'Role', 'Status', 'Created', ''], rows, 'No users.')}`,
        (req.query as Query).notice,
      ),
    );
  });

  app.post('/users', async (req, reply) => {
    const ctx = context(req, reply);
    const b = req.body as Query;
    const u = await addUiUser(
      deps.accounts,
      { username: String(b.username ?? ''), role: String(b.role ?? ''), password: String(b.password ?? '') },
      ctx.actor,
    );
    return done(reply, '/ui/users', `added UI user ${u.username} (${u.role})`);
  });

  for (const verb of ['disable', 'enable'] as const) {
    app.post(`/users/:username/${verb}`, async (req, reply) => {
      const ctx = context(req, reply);
      const { username } = req.params as { username: string };
      if (username === req.uiSession!.user.username && verb === 'disable')
        throw new SvcError('SVC_ERR_CONFLICT', 'you cannot disable your own account');
      const changed = await setUiUserDisabled(deps.accounts, username, verb === 'disable', ctx.actor);
      return done(reply, '/ui/users', changed ? `UI user ${username} ${verb}d` : 'nothing changed');
    });
  }

  // ---- Certificates
  app.get('/certificates', async (req, reply) => {
    const ctx = context(req, reply);
    const views = await listCertificates(deps, { warningDays: await deps.settings.get('cert_warning_days') });
    const { rows: shown, nav } = paged(views, '/ui/certificates', req.query as Query);
    const rows = shown.map((v) => {
      const tone =
        v.status === 'expired' ? 'bad' : v.status.startsWith('expires') ? 'bad' : v.status === 'valid' ? 'good' : '';
      return html`<tr>
        <td>${v.row.tenant}</td>
        <td>${v.row.name}</td>
        <td>${v.row.kind}</td>
        <td><span class="badge ${tone}">${v.status}</span></td>
        <td>${v.row.validTo}</td>
        <td>${v.row.subject}</td>
        <td><code>${v.row.sha256}</code></td>
      </tr>`;
    });
    const body = html`${table(['Tenant', 'Name', 'Kind', 'Status', 'Valid to', 'Subject', 'SHA-256'], rows, 'No certificates are registered. Register one with: svc cert add <path> --tenant <t> --name <n>')}${nav}`;
    return send(reply, page('Certificates', ctx, body));
  });

  // ---- Settings
  app.get('/settings', async (req, reply) => {
    const ctx = context(req, reply);
    const edit = can(ctx.actor, 'edit_settings');
    const rows = (await deps.settings.list()).map(
      (s) =>
        html`<tr>
          <td><code>${s.name}</code></td>
          <td>${s.def.description}</td>
          <td class="num">${s.def.defaultValue()}</td>
          <td class="num">
            ${s.value}${s.raw !== undefined && s.isDefault ? html` <span class="badge bad">stored "${s.raw}" does not parse</span>` : ''}
          </td>
          <td>${s.def.readAt}</td>
          <td>
            ${edit ? postForm(ctx, '/ui/settings', html`${hidden('name', s.name)}<input name="value" size="10" value="${s.raw ?? ''}" />`, 'Save') : ''}
          </td>
        </tr>`,
    );
    return send(
      reply,
      page(
        'Settings',
        ctx,
        table(['Setting', 'What', 'Default', 'In force', 'Read', ''], rows, ''),
        (req.query as Query).notice,
      ),
    );
  });

  app.post('/settings', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'edit_settings', 'change settings');
    const b = req.body as Query;
    await deps.settings.set(String(b.name ?? ''), String(b.value ?? ''));
    return done(reply, '/ui/settings', `${b.name} = ${b.value}`);
  });
}

function queueTable(queues: readonly QueueFigures[]): Html {
  const rows = queues.map(
    (q) =>
      html`<tr>
        <td>${q.tenant}/${q.flow}</td>
        <td class="num">${q.pending}</td>
        <td class="num">${q.retriesScheduled}</td>
        <td class="num">${q.processed}</td>
        <td class="num">${q.deadLettersPending}</td>
        <td>${q.worker ?? 'none'}</td>
      </tr>`,
  );
  const retries = queues.flatMap((q) =>
    q.retries.map(
      (r) =>
        html`<tr>
          <td>${q.tenant}/${q.flow}</td>
          <td class="num">${r.id}</td>
          <td class="num">${r.attempts}</td>
          <td>${new Date(r.dueMs).toISOString()}</td>
        </tr>`,
    ),
  );
  return html`${table(['Queue', 'Backlog', 'Retries scheduled', 'Processed', 'Dead letters', 'Worker'], rows, 'No queues yet.')}${
    retries.length === 0
      ? ''
      : html`<h2>Pending retries</h2>
          ${table(['Queue', 'Message id', 'Attempts', 'Due (UTC)'], retries.slice(0, 200), '')}`
  }`;
}

/** One page of a list (50 rows) and the links to its neighbours, keeping the other query fields. */
function paged<T>(rows: readonly T[], path: string, q: Query): { rows: readonly T[]; nav: Html } {
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

function clean(q: Query): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(q))
    if (v !== undefined && v !== '' && k !== 'before' && k !== 'notice' && k !== 'page') out[k] = v;
  return out;
}

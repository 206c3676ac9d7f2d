/** The Registry pages: tenants and the latest flows; one flow's versions, source, compiled form and trace switch. */
import { can } from '../../../app/accounts/roles.js';
import { listLatestFlows, showFlowVersion, type FlowVersionView } from '../../../app/use-cases/registry.js';
import { listTenants } from '../../../app/use-cases/tenants.js';
import { listTraceFlags, setTraceFlag } from '../../../app/use-cases/trace.js';
import { DIAGRAM_FORMATS, flowDiagram, type DiagramFormat } from '../../../app/use-cases/flow-diagram.js';
import { DEFAULT_WINDOW, NUMBER_WINDOWS, windowMinutes } from '../../../app/use-cases/flow-numbers.js';
import { SvcError } from '../../../common/errors.js';
import { html, raw, type Html } from '../html.js';
import { activityBlock } from '../activity-block.js';
import { hidden, json, page, postForm, table, type PageContext } from '../layout.js';
import { paged } from '../paging.js';
import { done, name, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

const TENANT_HEADERS = ['Tenant', 'Display name', 'Status', 'Created'];
const FLOW_HEADERS = ['Tenant', 'Flow', 'Latest', 'Hash', 'Published', 'Tracing'];

/** The switch a sysadmin sees; other roles see who may change it. */
function traceSwitch(ctx: PageContext, path: string, traced: boolean): Html {
  if (!can(ctx.actor, 'toggle_trace')) return html`<span class="muted">(only a sysadmin may change it)</span>`;
  const label = traced ? 'Turn tracing off' : 'Turn tracing on';
  return postForm(ctx, `${path}/trace`, hidden('enabled', traced ? '0' : '1'), label);
}

function sourceBlock(source: string | undefined): Html {
  return source === undefined
    ? html`<p class="muted">Not kept: this version was deployed before sources were stored.</p>`
    : html`<pre id="flow-source">${source}</pre>`;
}

/** The diagram drawn inline (an SVG of our own, every text in it escaped), and the same picture to download. */
function diagramBlock(path: string, version: string, diagram: FlowVersionView['diagram']): Html {
  if (!('svg' in diagram)) return html`<p class="error">Not drawn: ${diagram.problem}</p>`;
  const { svg } = diagram;
  const download = (format: DiagramFormat, label: string) =>
    html`<a href="${path}/diagram?${new URLSearchParams({ version, format }).toString()}">${label}</a>`;
  return html`<div class="diagram" id="flow-diagram">${raw(svg)}</div>
    <p class="muted">
      The same picture: ${download('svg', 'SVG')} · ${download('mermaid', 'Mermaid')} · ${download('dot', 'DOT')} (svc
      flows show --format svg|mermaid|dot)
    </p>`;
}

/** Which window the live numbers cover, and links to the others; on an older version, why there are none. */
function numbersLine(path: string, minutes: number | undefined, current: string | undefined): Html {
  if (minutes === undefined)
    return html`<p class="muted">
      Live numbers are drawn on the latest version only: they count the flow, not a version.
    </p>`;
  const shown = current || DEFAULT_WINDOW;
  const links = Object.keys(NUMBER_WINDOWS).map((w) =>
    w === shown ? html`<b>${w}</b>` : html`<a href="${path}?${new URLSearchParams({ window: w }).toString()}">${w}</a>`,
  );
  return html`<p class="window">
    Live numbers of the last ${links.map((l, i) => html`${i === 0 ? '' : ' · '}${l}`)}: deliveries per door; runs,
    failures and p95 time per step; the step that failed most is marked. Counted every minute, at most 5 s behind.
  </p>`;
}

const DIAGRAM_TYPES: Record<DiagramFormat, readonly [string, string]> = {
  svg: ['image/svg+xml; charset=utf-8', 'svg'],
  mermaid: ['text/plain; charset=utf-8', 'mmd'],
  dot: ['text/vnd.graphviz; charset=utf-8', 'dot'],
};

export const registryPages: PageRoutes = (app, deps, context) => {
  app.get('/registry', async (req, reply) => {
    const ctx = context(req, reply);
    const all = await listLatestFlows(deps.artifacts);
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
      ${table(TENANT_HEADERS, tenants, 'No tenants.')}
      <h2>Flows (latest versions)</h2>
      ${table(FLOW_HEADERS, rows, 'No flow is deployed.')}${nav}`;
    return send(reply, page('Registry', ctx, body, noticeOf(req)));
  });

  app.get('/registry/:tenant/:flow', async (req, reply) => {
    const ctx = context(req, reply);
    const { tenant, flow } = req.params as { tenant: string; flow: string };
    name(tenant, 'tenant');
    name(flow, 'flow');
    const path = `/ui/registry/${tenant}/${flow}`;
    const q = req.query as Query;
    const minutes = windowMinutes(q.window || undefined);
    const view = await showFlowVersion(deps.artifacts, tenant, flow, q.version, { events: deps.events, minutes });
    const { shown } = view;
    const traced = (await listTraceFlags(deps.traces, tenant)).some((f) => f.flow === flow && f.enabled);
    const rows = view.versions.map(
      (v) =>
        html`<tr>
          <td>
            <a href="${path}?version=${encodeURIComponent(v.version)}">${v.version}</a
            >${v.latest ? html` <span class="badge good">latest</span>` : ''}
          </td>
          <td><code>${v.hash}</code></td>
          <td>${v.created_at}</td>
        </tr>`,
    );
    // Support reads what tracing recorded: its traces, and a candidate replayed against them.
    const recorded = can(ctx.actor, 'read_traces')
      ? html` · <a href="/ui/traces?${new URLSearchParams({ tenant, flow }).toString()}">its traces</a> ·
          <a href="/ui/replay?${new URLSearchParams({ tenant, flow }).toString()}">replay a candidate</a>`
      : '';
    const scope = new URLSearchParams({ tenant, flow }).toString();
    const body = html`<p class="links">
        <a href="/ui/executions?${scope}">Its executions</a> ·
        <a href="/ui/executions?${scope}&amp;event=completed&amp;status=400-599">its failed runs</a> ·
        <a href="/ui/queues?${scope}">its queue</a> ·
        <a href="/ui/queues?${scope}#dead-letters">its dead letters</a>
      </p>
      <p>Tracing: <b>${traced ? 'on' : 'off'}</b> ${traceSwitch(ctx, path, traced)}${recorded}</p>
      <h2>Versions</h2>
      ${table(['Version', 'Hash', 'Published'], rows, '')}
      <h2>Diagram of version ${shown.version}${shown.latest ? ' (latest)' : ''}</h2>
      ${numbersLine(path, view.numbersMinutes, q.window)}${diagramBlock(path, shown.version, view.diagram)}
      <h2>Activity of ${tenant}/${flow}</h2>
      ${await activityBlock(deps.events, { tenant, flow }, `${tenant}/${flow}`)}
      <h2>Source of version ${shown.version}${shown.latest ? ' (latest)' : ''}</h2>
      ${sourceBlock(view.source)}
      <h2>Compiled flow (version ${shown.version})</h2>
      <pre>${json(view.compiled)}</pre>`;
    return send(reply, page(`Flow ${tenant}/${flow}`, ctx, body, noticeOf(req)));
  });

  app.get('/registry/:tenant/:flow/diagram', async (req, reply) => {
    context(req, reply);
    const { tenant, flow } = req.params as { tenant: string; flow: string };
    const q = req.query as Query;
    const format = (q.format ?? 'svg') as DiagramFormat;
    if (!DIAGRAM_FORMATS.includes(format))
      throw new SvcError('SVC_ERR_INVALID_INPUT', `format must be one of ${DIAGRAM_FORMATS.join(', ')}`);
    const { shown, drawing } = await flowDiagram(deps.artifacts, tenant, flow, q.version || undefined, format);
    const [type, ext] = DIAGRAM_TYPES[format];
    return reply
      .type(type)
      .header(
        'content-disposition',
        `inline; filename="${tenant}-${flow}-${shown.version.replace(/[^\w.-]/g, '_')}.${ext}"`,
      )
      .send(drawing);
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
    const notice = r.changed ? `tracing of ${tenant}/${flow} is now ${enabled ? 'on' : 'off'}` : 'nothing changed';
    return done(reply, `/ui/registry/${tenant}/${flow}`, notice);
  });
};

/**
 * The Replay page (support only, as the trace rows it shows): a flow, which of its traced
 * deliveries, and a candidate `.flow.md` uploaded from the browser; the verdict of each delivery,
 * and for each one that differs, the recorded and the candidate's value at every differing path,
 * side by side. The candidate is compiled and run in memory, never deployed (docs/testing.md).
 */
import { requirePermission } from '../../../app/accounts/roles.js';
// The replay itself (svc test's runner, undici's mock agent) is loaded on the first replay: a server
// whose support users never replay does not load it (test/serve-lazy-modules.test.ts).
import type { SupportReplay } from '../../../app/use-cases/replay.js';
import { UI_REPLAY_MAX } from '../../../app/use-cases/replay-rows.js';
import { parseSince } from '../../../app/use-cases/event-search.js';
import type { Observation } from '../../../app/testing/replay-observe.js';
import type { ReplayResult } from '../../../app/testing/replay.js';
import { MISSING, parsePath, valueAt } from '../../../app/testing/value-paths.js';
import { SvcError } from '../../../common/errors.js';
import { html, type Html } from '../html.js';
import { json, page, table, type PageContext } from '../layout.js';
import { send, type PageRoutes, type Query } from '../respond.js';

/** The windows offered, by the value the form sends. */
const WINDOWS: ReadonlyArray<readonly [string, string]> = [
  ['1h', 'the last hour'],
  ['6h', 'the last 6 hours'],
  ['24h', 'the last day'],
  ['7d', 'the last 7 days'],
];

const VERDICT_TEXT = { same: 'same', differs: 'differs', not_replayable: 'not replayable' } as const;

export const replayPage: PageRoutes = (app, deps, context) => {
  app.get('/replay', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'read_traces', 'replay traced deliveries');
    return send(reply, page('Replay', ctx, replayForm(ctx, req.query as Query)));
  });

  app.post('/replay', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'read_traces', 'replay traced deliveries');
    const f = req.body as Query;
    const source = f.candidate ?? '';
    if (source.trim() === '') throw new SvcError('SVC_ERR_INVALID_INPUT', 'choose a candidate .flow.md file');
    const window = f.window ?? '1h';
    if (!WINDOWS.some(([value]) => value === window))
      throw new SvcError('SVC_ERR_INVALID_INPUT', `window must be one of ${WINDOWS.map(([v]) => v).join(', ')}`);
    const last = f.last === undefined || f.last === '' ? undefined : Number(f.last);
    if (last !== undefined && (!Number.isInteger(last) || last < 1))
      throw new SvcError('SVC_ERR_INVALID_INPUT', `"at most" must be a whole number of deliveries, got ${f.last}`);
    const correlationId = f.correlation_id?.trim() || undefined;
    const { replayForSupport } = await import('../../../app/use-cases/replay.js');
    const report = await replayForSupport(
      { log: deps.events, artifacts: deps.artifacts },
      deps.replay,
      {
        tenant: f.tenant ?? '',
        flow: f.flow ?? '',
        source,
        fileName: f.candidate_name || 'candidate.flow.md',
        since: correlationId === undefined ? parseSince(window) : undefined,
        correlationId,
        last,
        ignore: (f.ignore ?? '').split(/[\s,]+/).filter((p) => p !== ''),
        ignoreVolatile: f.ignore_volatile === 'on',
      },
      ctx.actor,
    );
    if (report.refused !== undefined) {
      const refused = html`<div class="error" role="alert">
        <p>The candidate does not compile; nothing was replayed.</p>
        <pre>${report.refused.join('\n')}</pre>
      </div>`;
      return send(reply.status(422), page('Replay', ctx, html`${refused}${replayForm(ctx, f)}`));
    }
    return send(reply, page('Replay', ctx, html`${replayForm(ctx, f)}${verdicts(report, f)}`));
  });
};

function replayForm(ctx: PageContext, q: Query): Html {
  const window = q.window ?? '1h';
  return html`<form method="post" action="/ui/replay" enctype="multipart/form-data" class="filters">
      <input type="hidden" name="_csrf" value="${ctx.csrf}" />
      <label>Tenant<input name="tenant" value="${q.tenant ?? ''}" required /></label>
      <label>Flow<input name="flow" value="${q.flow ?? ''}" required /></label>
      <label
        >Deliveries of
        <select name="window">
          ${WINDOWS.map(([value, label]) => html`<option value="${value}" ${value === window ? 'selected' : ''}>${label}</option>`)}
        </select></label
      >
      <label>or one correlation id<input name="correlation_id" value="${q.correlation_id ?? ''}" /></label>
      <label>At most<input name="last" type="number" min="1" max="${UI_REPLAY_MAX}" value="${q.last ?? '50'}" /></label>
      <label>Candidate .flow.md<input name="candidate" type="file" accept=".md,text/markdown" required /></label>
      <label
        >Ignore paths<input name="ignore" value="${q.ignore ?? ''}" placeholder="body.id body.items[*].at"
      /></label>
      <label
        ><span
          ><input type="checkbox" name="ignore_volatile" ${q.ignore_volatile === 'on' ? 'checked' : ''} /> ignore the
          paths the candidate declares volatile</span
        ></label
      >
      <button type="submit">Replay</button>
    </form>
    <p class="muted">
      Each traced delivery runs through the candidate with its call outs answered from its recording and the clock at
      its time; nothing is deployed, written or sent. Values are shown masked, as the log keeps them.
    </p>`;
}

function verdicts(report: SupportReplay, f: Query): Html {
  const c = report.counts;
  const summary = html`<p role="status" class="${c.differs > 0 ? 'error' : 'notice'}">
    ${c.deliveries} deliveries: ${c.same} same, ${c.differs} differ, ${c.not_replayable} not
    replayable${report.capped ? ` (the latest ${c.deliveries} of more in the window)` : ''}
  </p>`;
  const rows = report.results.map(
    (r) =>
      html`<tr>
        <td><a href="/ui/traces?${traceQuery(f, r)}">${r.correlationId}</a></td>
        <td>${r.ts ?? ''}</td>
        <td><span class="badge ${badgeOf(r)}">${VERDICT_TEXT[r.verdict.kind]}</span></td>
        <td>${detailOf(r)}</td>
      </tr>`,
  );
  const differing = report.results.filter((r) => r.verdict.kind === 'differs');
  const window = WINDOWS.find(([value]) => value === f.window)?.[1] ?? 'the last hour';
  const what = f.correlation_id?.trim() ? `delivery ${f.correlation_id.trim()}` : `the deliveries of ${window}`;
  return html`<h2>Verdicts</h2>
    <p>
      Candidate <code>${f.candidate_name || 'candidate.flow.md'}</code> against ${what} of
      ${f.tenant ?? ''}/${f.flow ?? ''}.
    </p>
    ${summary}
    ${table(['Delivery', 'Arrived', 'Verdict', 'Where, or why'], rows, 'No traced delivery of the flow in this window.')}
    ${differing.map(sideBySide)}`;
}

/** One differing delivery: each differing path with both values, then both whole observations. */
function sideBySide(r: ReplayResult): Html {
  const paths = r.verdict.kind === 'differs' ? r.verdict.paths : [];
  const rows = paths.map(
    (p) =>
      html`<tr>
        <td><code>${p}</code></td>
        <td><pre>${shown(at(r.recorded, p))}</pre></td>
        <td><pre>${shown(at(r.candidate, p))}</pre></td>
      </tr>`,
  );
  return html`<section class="replay-diff" data-delivery="${r.correlationId}">
    <h2>Delivery ${r.correlationId}</h2>
    ${table(['Path', 'Deployed (recorded)', 'Candidate'], rows, '')}
    <details>
      <summary>Everything compared</summary>
      <div class="side-by-side">
        <div>
          <h3>Deployed (recorded)</h3>
          <pre>${json(r.recorded)}</pre>
        </div>
        <div>
          <h3>Candidate</h3>
          <pre>${json(r.candidate)}</pre>
        </div>
      </div>
    </details>
  </section>`;
}

/** The value of an observation at a verdict's path (`body.items[0]`, `published.fulfil[0].id`, `steps`). */
function at(o: Observation | undefined, path: string): unknown {
  if (o === undefined) return MISSING;
  const segments = parsePath(path);
  return segments === undefined ? MISSING : valueAt(o, segments);
}

function shown(v: unknown): string {
  return v === MISSING ? '(nothing)' : JSON.stringify(v, null, 2);
}

function detailOf(r: ReplayResult): string {
  if (r.verdict.kind === 'differs') return r.verdict.paths.join(', ');
  if (r.verdict.kind === 'not_replayable') return r.verdict.why;
  return '';
}

function badgeOf(r: ReplayResult): string {
  return r.verdict.kind === 'same' ? 'good' : r.verdict.kind === 'differs' ? 'bad' : '';
}

function traceQuery(f: Query, r: ReplayResult): string {
  return new URLSearchParams({ tenant: f.tenant ?? '', correlation_id: r.correlationId }).toString();
}

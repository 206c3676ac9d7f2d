/**
 * The Audit page: one tenant's audit chain (or the platform's), newest first, paged back by seq
 * through the whole chain, filtered by event type and actor; and its verification on demand.
 */
import {
  auditEntriesPage,
  auditEventTypes,
  PLATFORM_CHAIN,
  verifyAuditChain,
  type AuditPage,
} from '../../../app/use-cases/audit.js';
import { listTenants } from '../../../app/use-cases/tenants.js';
import { SvcError } from '../../../common/errors.js';
import { isValidName } from '../../../common/names.js';
import { filterField, filterRefusal, filterSelect } from '../filters.js';
import { html, type Html } from '../html.js';
import { page, table } from '../layout.js';
import { clean } from '../paging.js';
import { send, type PageRoutes, type Query } from '../respond.js';

const ENTRY_HEADERS = ['Seq', 'Event', 'Created', 'Correlation id', 'Payload'];

type Verified = Awaited<ReturnType<typeof verifyAuditChain>>;

/** The chain a picker value names, for messages. */
const chainLabel = (chain: string): string => (chain === PLATFORM_CHAIN ? 'the platform (settings)' : chain);

function chainPicker(
  tenants: readonly { readonly id: string }[],
  tenant: string | undefined,
  eventTypes: readonly string[],
  q: Query,
): Html {
  const options = [...tenants.map((t) => t.id), PLATFORM_CHAIN].map(
    (id) => html`<option value="${id}" ${id === tenant ? 'selected' : ''}>${chainLabel(id)}</option>`,
  );
  const types = eventTypes.map((t) => [t, t] as const);
  return html`<form method="get" class="filters">
    <label
      >Tenant
      <select name="tenant">
        ${options}
      </select></label
    >${filterSelect('event_type', 'Event type', types, q.event_type)}${filterField('actor', 'Actor', q.actor, 'cli, ui:alice')}<button
      type="submit"
    >
      Show</button
    ><button type="submit" name="verify" value="1">Verify the chain</button>
  </form>`;
}

/** What the listing shows: the chain's size, the filter, and whether it is a later page. */
function caption(listing: AuditPage, q: Query): string {
  const filters = [
    q.event_type ? `of type ${q.event_type}` : '',
    q.actor ? `by ${q.actor}` : '',
    q.before ? `older than seq ${q.before}` : '',
  ].filter((f) => f !== '');
  return `${listing.total} entries, newest first${filters.length === 0 ? '' : `; showing those ${filters.join(', ')}`}.`;
}

function verdict(tenant: string, verified: Verified | undefined): Html | string {
  if (verified === undefined) return '';
  return verified.ok
    ? html`<div class="notice" role="status">
        The chain of ${chainLabel(tenant)} verifies: ${verified.count} entries.
      </div>`
    : html`<div class="error" role="alert">
        The chain of ${chainLabel(tenant)} is broken at seq ${verified.brokenSeq}.
      </div>`;
}

export const auditPage: PageRoutes = (app, deps, context) => {
  app.get('/audit', async (req, reply) => {
    const ctx = context(req, reply);
    const q = req.query as Query;
    const tenants = await listTenants(deps.tenants);
    if (q.tenant && !isValidName(q.tenant) && q.tenant !== PLATFORM_CHAIN) {
      reply.code(400);
      const refused = filterRefusal(`tenant must be a tenant's name or ${PLATFORM_CHAIN}, got "${q.tenant}"`);
      return send(reply, page('Audit', ctx, html`${chainPicker(tenants, undefined, [], q)}${refused}`));
    }
    const tenant = q.tenant || tenants[0]?.id;
    if (tenant === undefined) return send(reply, page('Audit', ctx, html`<p class="muted">No tenants.</p>`));
    const eventTypes = await auditEventTypes(deps.audit, tenant);
    const picker = chainPicker(tenants, tenant, eventTypes, q);
    let listing: AuditPage;
    try {
      listing = await auditEntriesPage(deps.audit, tenant, q, { eventTypes });
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      // A refused value lists nothing: dropping it would show entries that were not asked for.
      reply.code(err.status);
      return send(reply, page('Audit', ctx, html`${picker}${filterRefusal(err.message)}`));
    }
    const verified = q.verify === '1' ? await verifyAuditChain(deps.audit, tenant) : undefined;
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
    const { verify: _verify, ...kept } = clean(q);
    const olderHref = `/ui/audit?${new URLSearchParams({ ...kept, tenant, before: String(listing.olderBefore) }).toString()}`;
    const older = listing.olderBefore === undefined ? '' : html`<p><a href="${olderHref}">Older entries</a></p>`;
    const body = html`${picker}${verdict(tenant, verified)}
      <p class="muted">${caption(listing, q)}</p>
      ${table(ENTRY_HEADERS, rows, 'No entries match.')}${older}`;
    return send(reply, page('Audit', ctx, body));
  });
};

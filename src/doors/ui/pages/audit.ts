/** The Audit page: one tenant's audit chain (or the platform's), newest first, and its verification on demand. */
import { latestAuditEntries, PLATFORM_CHAIN, verifyAuditChain } from '../../../app/use-cases/audit.js';
import { listTenants } from '../../../app/use-cases/tenants.js';
import { isValidName } from '../../../common/names.js';
import { html, type Html } from '../html.js';
import { page, table } from '../layout.js';
import { send, type PageRoutes, type Query } from '../respond.js';

const ENTRY_HEADERS = ['Seq', 'Event', 'Created', 'Correlation id', 'Payload'];
/** Entries listed, newest first; the total is shown beside them. */
const ENTRIES_SHOWN = 100;

type Verified = Awaited<ReturnType<typeof verifyAuditChain>>;

/** The chain a picker value names, for messages. */
const chainLabel = (chain: string): string => (chain === PLATFORM_CHAIN ? 'the platform (settings)' : chain);

function tenantPicker(tenants: readonly { readonly id: string }[], tenant: string | undefined): Html {
  const options = [...tenants.map((t) => t.id), PLATFORM_CHAIN].map(
    (id) => html`<option value="${id}" ${id === tenant ? 'selected' : ''}>${chainLabel(id)}</option>`,
  );
  return html`<form method="get" class="filters">
    <label
      >Tenant
      <select name="tenant">
        ${options}
      </select></label
    ><button type="submit">Show</button><button type="submit" name="verify" value="1">Verify the chain</button>
  </form>`;
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
    const tenant = q.tenant && (isValidName(q.tenant) || q.tenant === PLATFORM_CHAIN) ? q.tenant : tenants[0]?.id;
    if (tenant === undefined) return send(reply, page('Audit', ctx, html`<p class="muted">No tenants.</p>`));
    const verified = q.verify === '1' ? await verifyAuditChain(deps.audit, tenant) : undefined;
    const listing = await latestAuditEntries(deps.audit, tenant, ENTRIES_SHOWN);
    // The use case gives the newest entries oldest first (as `svc audit` prints them); the page says newest first.
    const rows = [...listing.entries].reverse().map(
      (e) =>
        html`<tr>
          <td class="num">${e.seq}</td>
          <td>${e.eventType}</td>
          <td>${e.createdAt}</td>
          <td>${e.correlationId}</td>
          <td><pre>${e.payload}</pre></td>
        </tr>`,
    );
    const body = html`${tenantPicker(tenants, tenant)}${verdict(tenant, verified)}
      <p class="muted">${listing.total} entries, newest first.</p>
      ${table(ENTRY_HEADERS, rows, 'No entries.')}`;
    return send(reply, page('Audit', ctx, body));
  });
};

/** The Keys page (sysadmin): every tenant's API keys, the form that creates one (shown once) and the revoke forms. */
import { requirePermission } from '../../../app/accounts/roles.js';
import {
  createApiKey,
  listAllApiKeys,
  parseFlows,
  parseRateLimit,
  parseScopes,
  revokeApiKey,
  type KeyView,
} from '../../../app/use-cases/keys.js';
import { SvcError } from '../../../common/errors.js';
import { html, type Html } from '../html.js';
import { page, postForm, table, type PageContext } from '../layout.js';
import { done, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

const KEY_HEADERS = ['Id', 'Tenant', 'Label', 'Status', 'Scopes', 'Flows', 'Expires', ''];

function keyRow(ctx: PageContext, k: KeyView): Html {
  const revoke = k.status === 'revoked' ? '' : postForm(ctx, `/ui/keys/${k.row.id}/revoke`, html``, 'Revoke');
  return html`<tr>
    <td class="num">${k.row.id}</td>
    <td>${k.row.tenant}</td>
    <td>${k.row.label}</td>
    <td>${k.status}</td>
    <td>${k.row.scopes.join(', ')}</td>
    <td>${k.row.flows.join(', ') || 'all'}</td>
    <td>${k.row.expiresAt ?? 'never'}</td>
    <td>${revoke}</td>
  </tr>`;
}

function createForm(ctx: PageContext, tenants: readonly { readonly id: string }[]): Html {
  const options = tenants.map((t) => html`<option>${t.id}</option>`);
  return postForm(
    ctx,
    '/ui/keys',
    html`<label
        >Tenant
        <select name="tenant">
          ${options}
        </select></label
      ><label>Label <input name="label" required /></label><label>Scopes <input name="scopes" placeholder="*" /></label
      ><label>Flows <input name="flows" placeholder="all" /></label
      ><label>Requests/s <input name="rate_limit" /></label>`,
    'Create key',
    'filters',
  );
}

export const keysPages: PageRoutes = (app, deps, context) => {
  app.get('/keys', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_keys', 'manage API keys');
    const { tenants, keys } = await listAllApiKeys({ tenants: deps.tenants, keys: deps.keys });
    const rows = keys.map((k) => keyRow(ctx, k));
    const body = html`${createForm(ctx, tenants)}${table(KEY_HEADERS, rows, 'No API keys.')}`;
    return send(reply, page('Keys', ctx, body, noticeOf(req)));
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
};

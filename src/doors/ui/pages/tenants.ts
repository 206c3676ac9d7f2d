/** The Tenants page (sysadmin): the tenants with their disable and enable forms, and the form that registers one. */
import { requirePermission } from '../../../app/accounts/roles.js';
import { createTenant, disableTenant, enableTenant, listTenants } from '../../../app/use-cases/tenants.js';
import { html } from '../html.js';
import { hidden, page, postForm, table } from '../layout.js';
import { done, name, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

const TENANT_HEADERS = ['Tenant', 'Display name', 'Status', 'Created', ''];

export const tenantsPages: PageRoutes = (app, deps, context) => {
  app.get('/tenants', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_tenants', 'manage tenants');
    const rows = (await listTenants(deps.tenants)).map((t) => {
      const to = t.status === 'active' ? 'disabled' : 'active';
      const button = to === 'disabled' ? 'Disable' : 'Enable';
      return html`<tr>
        <td>${t.id}</td>
        <td>${t.displayName}</td>
        <td>${t.status}</td>
        <td>${t.createdAt}</td>
        <td>${postForm(ctx, `/ui/tenants/${t.id}/status`, hidden('status', to), button)}</td>
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
    const body = html`${create}${table(TENANT_HEADERS, rows, 'No tenants.')}`;
    return send(reply, page('Tenants', ctx, body, noticeOf(req)));
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
};

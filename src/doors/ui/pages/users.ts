/** The Users page (sysadmin): the UI accounts with their disable and enable forms, and the form that adds one. */
import { requirePermission } from '../../../app/accounts/roles.js';
import { addUiUser, listUiUsers, setUiUserDisabled } from '../../../app/accounts/ui-accounts.js';
import { SvcError } from '../../../common/errors.js';
import { html, type Html } from '../html.js';
import { page, postForm, table, type PageContext } from '../layout.js';
import { done, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

const USER_HEADERS = ['Username', 'Role', 'Status', 'Created', ''];

function addForm(ctx: PageContext): Html {
  const roles = html`<option>developer</option>
    <option>support</option>
    <option>sysadmin</option>`;
  const password = html`<input name="password" type="password" autocomplete="new-password" required />`;
  return postForm(
    ctx,
    '/ui/users',
    html`<label>Username <input name="username" required /></label
      ><label
        >Role
        <select name="role">
          ${roles}
        </select></label
      ><label>Password ${password}</label>`,
    'Add user',
    'filters',
  );
}

export const usersPages: PageRoutes = (app, deps, context) => {
  app.get('/users', async (req, reply) => {
    const ctx = context(req, reply);
    requirePermission(ctx.actor, 'manage_ui_users', 'manage UI users');
    const rows = (await listUiUsers(deps.accounts)).map((u) => {
      const to = u.disabled ? 'enable' : 'disable';
      const action = `/ui/users/${encodeURIComponent(u.username)}/${to}`;
      return html`<tr>
        <td>${u.username}</td>
        <td>${u.role}</td>
        <td>${u.disabled ? 'disabled' : 'active'}</td>
        <td>${u.createdAt}</td>
        <td>${postForm(ctx, action, html``, to === 'disable' ? 'Disable' : 'Enable')}</td>
      </tr>`;
    });
    const body = html`${addForm(ctx)}${table(USER_HEADERS, rows, 'No users.')}`;
    return send(reply, page('UI users', ctx, body, noticeOf(req)));
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
};

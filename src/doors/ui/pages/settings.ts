/** The Settings page: every platform setting, its default and value in force; a form per row for `edit_settings`. */
import { can } from '../../../app/accounts/roles.js';
import { changeSetting, listSettings, type SettingValue } from '../../../app/use-cases/settings.js';
import { html, type Html } from '../html.js';
import { hidden, page, postForm, table, type PageContext } from '../layout.js';
import { done, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

const SETTING_HEADERS = ['Setting', 'What', 'Default', 'In force', 'Read', ''];

/** The value in force, and a warning when the stored text does not parse (the default then applies). */
function inForce(s: SettingValue): Html {
  const unreadable = s.raw !== undefined && s.isDefault;
  return html`${s.value}${unreadable ? html` <span class="badge bad">stored "${s.raw}" does not parse</span>` : ''}`;
}

function editForm(ctx: PageContext, s: SettingValue): Html {
  const fields = html`${hidden('name', s.name)}<input name="value" size="10" value="${s.raw ?? ''}" />`;
  return postForm(ctx, '/ui/settings', fields, 'Save');
}

export const settingsPages: PageRoutes = (app, deps, context) => {
  app.get('/settings', async (req, reply) => {
    const ctx = context(req, reply);
    const edit = can(ctx.actor, 'edit_settings');
    const rows = (await listSettings(deps.settings)).map(
      (s) =>
        html`<tr>
          <td><code>${s.name}</code></td>
          <td>${s.def.description}</td>
          <td class="num">${s.def.defaultValue()}</td>
          <td class="num">${inForce(s)}</td>
          <td>${s.def.readAt}</td>
          <td>${edit ? editForm(ctx, s) : ''}</td>
        </tr>`,
    );
    return send(reply, page('Settings', ctx, table(SETTING_HEADERS, rows, ''), noticeOf(req)));
  });

  app.post('/settings', async (req, reply) => {
    const ctx = context(req, reply);
    const b = req.body as Query;
    await changeSetting(deps.settings, { name: String(b.name ?? ''), value: String(b.value ?? '') }, ctx.actor);
    return done(reply, '/ui/settings', `${b.name} = ${b.value}`);
  });
};

/** The Settings page: every platform setting, its default and value in force; a form per row for `edit_settings`. */
import { can } from '../../../app/accounts/roles.js';
import {
  changeSetting,
  listSettings,
  takesEffect,
  unsetSetting,
  type SettingChangeResult,
  type SettingValue,
} from '../../../app/use-cases/settings.js';
import { html, type Html } from '../html.js';
import { hidden, page, postForm, table, type PageContext } from '../layout.js';
import { done, noticeOf, send, type PageRoutes, type Query } from '../respond.js';

const SETTING_HEADERS = ['Setting', 'What', 'Default', 'In force', 'Read', ''];

/** The value in force, and a warning when the stored text does not parse (the default then applies). */
function inForce(s: SettingValue): Html {
  const unreadable = s.raw !== undefined && s.isDefault;
  return html`${s.value}${unreadable ? html` <span class="badge bad">stored "${s.raw}" does not parse</span>` : ''}`;
}

/** Save a value; and, for a stored one, go back to the default. */
function editForm(ctx: PageContext, s: SettingValue): Html {
  const fields = html`${hidden('name', s.name)}<input name="value" size="10" value="${s.raw ?? ''}" />`;
  const save = postForm(ctx, '/ui/settings', fields, 'Save');
  if (s.raw === undefined) return save;
  return html`${save}${postForm(ctx, '/ui/settings', html`${hidden('name', s.name)}${hidden('unset', 1)}`, 'Use the default')}`;
}

/** The notice after a change: what it did and when it takes effect (the words `svc settings` prints too). */
function changed(r: SettingChangeResult): string {
  if (!r.changed) return `${r.name}: nothing changed`;
  const what = r.to === undefined ? `${r.name} back to its default ${r.value}` : `${r.name} = ${r.to}`;
  return `${what}, ${takesEffect(r.readAt)}`;
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
    const name = String(b.name ?? '');
    const r =
      b.unset === '1'
        ? await unsetSetting(deps, name, ctx.actor)
        : await changeSetting(deps, { name, value: String(b.value ?? '') }, ctx.actor);
    return done(reply, '/ui/settings', changed(r));
  });
};

/**
 * `svc settings list|set|unset`: the platform settings without SQL, through the same use cases as
 * the UI's Settings page (a value the service would not read is refused with the reason; each change
 * is audited on the platform chain; the output says when it takes effect).
 */
import { Argument, Command, Option } from 'commander';
import { CLI_OPERATOR } from '../app/accounts/roles.js';
import {
  changeSetting,
  listSettings,
  takesEffect,
  unsetSetting,
  type SettingChangeResult,
} from '../app/use-cases/settings.js';
import { addStoreOptions, type StoreFlags } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

export function registerSettings(program: Command): void {
  const settings = program
    .command('settings')
    .description('list and change the platform settings (the Settings page of the UI); each change is audited');
  settings
    .command('list')
    .description('every setting: its value in force, the stored value (none: the default), and when svc reads it')
    .addOption(new Option('--json', 'print a JSON array'))
    .action(settingsList);
  settings
    .command('set')
    .description('store a setting; a value svc would not read is refused and nothing is stored')
    .addArgument(new Argument('<name>', 'a setting name, as svc settings list shows it'))
    .addArgument(new Argument('<value>', 'the value to store'))
    .action((name: string, value: string, opts: StoreFlags) => settingsSet(opts, name, value));
  settings
    .command('unset')
    .description('remove a stored setting, so its default is in force again')
    .addArgument(new Argument('<name>', 'a setting name'))
    .action((name: string, opts: StoreFlags) => settingsUnset(opts, name));
  for (const c of settings.commands) addStoreOptions(c);
}

export interface SettingsListOptions extends StoreFlags {
  json?: boolean;
}

export async function settingsList(opts: SettingsListOptions): Promise<void> {
  const values = await withStore(opts, (s) => listSettings(s.settings), { readOnly: true });
  if (opts.json) {
    out(
      JSON.stringify(
        values.map((v) => ({
          name: v.name,
          value: v.value,
          stored: v.raw ?? null,
          default: v.def.defaultValue(),
          is_default: v.isDefault,
          read_at: v.def.readAt,
          description: v.def.description,
        })),
        null,
        2,
      ),
    );
    return;
  }
  out(
    formatTable(
      ['NAME', 'IN_FORCE', 'STORED', 'DEFAULT', 'READ'],
      values.map((v) => [
        v.name,
        String(v.value),
        v.raw === undefined ? '-' : v.isDefault ? `"${v.raw}" (does not parse: the default applies)` : v.raw,
        String(v.def.defaultValue()),
        v.def.readAt,
      ]),
    ),
  );
}

export async function settingsSet(opts: StoreFlags, name: string, value: string): Promise<void> {
  const r = await withStore(opts, (s) => changeSetting(s, { name, value }, CLI_OPERATOR));
  out(describe(r));
}

export async function settingsUnset(opts: StoreFlags, name: string): Promise<void> {
  const r = await withStore(opts, (s) => unsetSetting(s, name, CLI_OPERATOR));
  out(describe(r));
}

/** One line: what changed (or that nothing did), the value in force, and when it takes effect. */
export function describe(r: SettingChangeResult): string {
  if (!r.changed)
    return r.to === undefined
      ? `${r.name} was not set (the default ${r.value} is in force); nothing changed`
      : `${r.name} was already ${r.to}; nothing changed`;
  const what = r.to === undefined ? `${r.name} unset (was ${r.from}): the default ${r.value}` : `${r.name} = ${r.to}`;
  return `${what}, ${takesEffect(r.readAt)}; audited as setting.changed (svc audit --platform)`;
}

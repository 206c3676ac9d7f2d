/**
 * Platform settings as an operator reads and changes them (the UI's Settings page): every known
 * setting with the value in force, and one change, allowed to a role with `edit_settings`.
 */
import type { SettingsStore } from '../../store/contracts/index.js';
import type { SettingValue } from '../../store/contracts/index.js';
import { requirePermission, type Actor } from '../accounts/roles.js';

export type { SettingValue };

/** A setting to change: its catalogue name and the text to store, both as the form sent them. */
export interface SettingChange {
  readonly name: string;
  readonly value: string;
}

/** Every known setting, in catalogue order, with the stored text and the value in force. */
export async function listSettings(settings: SettingsStore): Promise<SettingValue[]> {
  return settings.list();
}

/**
 * Stores one setting. The store refuses an unknown name and a value its reader would not take
 * (`SVC_ERR_INVALID_INPUT`), so what is written is what takes effect. It writes no audit entry: the
 * audit chains are per tenant, and a setting belongs to none.
 * @throws SvcError `SVC_ERR_FORBIDDEN` for a role without `edit_settings`.
 */
export async function changeSetting(settings: SettingsStore, change: SettingChange, actor: Actor): Promise<void> {
  requirePermission(actor, 'edit_settings', 'change settings');
  await settings.set(change.name, change.value);
}

/**
 * Platform settings as an operator reads and changes them: the UI's Settings page and
 * `svc settings` call these. Every known setting with the value in force; one change (a value, or
 * back to the default), allowed to a role with `edit_settings`, and audited.
 *
 * The audit chains are per tenant and a setting belongs to none: a change is written on the
 * platform's own chain (PLATFORM_CHAIN, a name no tenant can have), which `svc audit --platform`
 * and the UI's Audit page read and verify like a tenant's.
 */
import type { AuditStore, SettingsStore, SettingValue } from '../../store/contracts/index.js';
import { assertSettingName, settingText } from '../../store/contracts/index.js';
import { Settings, type SettingDef } from '../../common/settings.js';
import { requirePermission, type Actor } from '../accounts/roles.js';
import { PLATFORM_CHAIN } from './audit.js';

export type { SettingValue };

/** A setting to change: its catalogue name and the text to store, both as the form or the command line sent them. */
export interface SettingChange {
  readonly name: string;
  readonly value: string;
}

export interface SettingsDeps {
  readonly settings: SettingsStore;
  readonly audit: AuditStore;
}

/** What a change did. */
export interface SettingChangeResult {
  readonly name: string;
  /** The stored text before, or undefined when there was no row (the default was in force). */
  readonly from: string | undefined;
  /** The stored text after, or undefined when the row was removed. */
  readonly to: string | undefined;
  /** False when the stored text was already this (no audit entry is written). */
  readonly changed: boolean;
  /** The value in force after the change (the default when unset). */
  readonly value: number;
  /** When the service reads it: a `startup` setting takes effect at the next start, the others now. */
  readonly readAt: SettingDef['readAt'];
}

/** Every known setting, in catalogue order, with the stored text and the value in force. */
export async function listSettings(settings: SettingsStore): Promise<SettingValue[]> {
  return settings.list();
}

/**
 * Stores one setting. An unknown name and a value its reader would not take are refused
 * (`SVC_ERR_INVALID_INPUT`) and nothing is stored, so what is written is what takes effect.
 * @throws SvcError `SVC_ERR_FORBIDDEN` for a role without `edit_settings`.
 */
export async function changeSetting(
  deps: SettingsDeps,
  change: SettingChange,
  actor: Actor,
): Promise<SettingChangeResult> {
  requirePermission(actor, 'edit_settings', 'change settings');
  const to = settingText(change.name, change.value);
  const name = change.name as keyof typeof Settings;
  const from = await deps.settings.raw(name);
  if (from !== to) await deps.settings.set(name, to);
  return recorded(deps, name, from, to, actor);
}

/**
 * Removes a stored setting, so its default is in force again.
 * @throws SvcError `SVC_ERR_INVALID_INPUT` for an unknown name; `SVC_ERR_FORBIDDEN` for a role without `edit_settings`.
 */
export async function unsetSetting(deps: SettingsDeps, name: string, actor: Actor): Promise<SettingChangeResult> {
  requirePermission(actor, 'edit_settings', 'change settings');
  assertSettingName(name);
  const from = await deps.settings.raw(name);
  if (from !== undefined) await deps.settings.unset(name);
  return recorded(deps, name, from, undefined, actor);
}

/** Audits a change that changed something (`setting.changed` on the platform chain) and says what it did. */
async function recorded(
  deps: SettingsDeps,
  name: keyof typeof Settings,
  from: string | undefined,
  to: string | undefined,
  actor: Actor,
): Promise<SettingChangeResult> {
  const changed = from !== to;
  if (changed)
    await deps.audit.append({
      tenant: PLATFORM_CHAIN,
      eventType: 'setting.changed',
      payload: { name, from: from ?? null, to: to ?? null, actor: actor.name },
    });
  return { name, from, to, changed, value: await deps.settings.get(name), readAt: Settings[name].readAt };
}

/** When a change takes effect, in words for the CLI and the UI. */
export function takesEffect(readAt: SettingDef['readAt']): string {
  return readAt === 'startup'
    ? 'takes effect at the next start of svc serve (read at startup)'
    : `in force now (read ${readAt === 'per-request' ? 'per request' : 'per cycle'})`;
}

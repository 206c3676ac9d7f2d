/** The settings contract: the stored platform settings and the rules for what may be written. */
import { SvcError } from '../../common/errors.js';
import { parseSetting, Settings, type SettingDef, type SettingName } from '../../common/settings.js';
import type { Awaitable } from '../../common/awaitable.js';

export interface SettingValue {
  readonly name: SettingName;
  readonly def: SettingDef;
  /** The value in force: the stored one when it parses, else the default. */
  readonly value: number;
  /** The stored text, or undefined when no row exists. */
  readonly raw: string | undefined;
  /** True when `value` is the default (no row, or a row that cannot be parsed). */
  readonly isDefault: boolean;
}

export function isSettingName(name: string): name is SettingName {
  return Object.hasOwn(Settings, name);
}

/** Mirrors parseSetting's acceptance test: true when `text` would be read as itself, not the default. */
export function isAccepted(d: SettingDef, text: string): boolean {
  const pattern = d.integer ? /^\d+$/ : /^\d+(\.\d+)?$/;
  if (!pattern.test(text)) return false;
  const value = Number(text);
  return Number.isFinite(value) && value >= d.min;
}

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface SettingsStore {
  /** The value in force (an absent or unreadable row gives the default). */
  get(name: SettingName): Awaitable<number>;
  raw(name: SettingName): Awaitable<string | undefined>;
  /** @throws SvcError `SVC_ERR_INVALID_INPUT` for an unknown name or a value the reader would not take. */
  set(name: string, value: number | string): Awaitable<void>;
  /**
   * Removes the stored row, so the default is in force again. True when a row was removed.
   * @throws SvcError `SVC_ERR_INVALID_INPUT` for an unknown name.
   */
  unset(name: string): Awaitable<boolean>;
  /** Every known setting, in catalogue order. */
  list(): Awaitable<SettingValue[]>;
}

/** @throws SvcError `SVC_ERR_INVALID_INPUT` naming the known settings, for a name that is not one of them. */
export function assertSettingName(name: string): asserts name is SettingName {
  if (!isSettingName(name))
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `unknown setting "${name}"; known: ${Object.keys(Settings).join(', ')}`,
    );
}

/**
 * The text to store for a setting. Refuses an unknown name and a value the reader would not accept
 * (it would silently fall back to the default), so what is written is what takes effect.
 * @throws SvcError `SVC_ERR_INVALID_INPUT`
 */
export function settingText(name: string, value: number | string): string {
  assertSettingName(name);
  const text = String(value).trim();
  const d: SettingDef = Settings[name];
  if (!isAccepted(d, text)) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `setting ${name} needs ${d.integer ? 'a whole number' : 'a number'} of at least ${d.min}, got "${String(value)}"`,
    );
  }
  return text;
}

/** Every known setting in catalogue order, from the stored texts `raw` gives. */
export function settingValues(raw: (name: SettingName) => string | undefined): SettingValue[] {
  return (Object.keys(Settings) as SettingName[]).map((name) => {
    const text = raw(name);
    const def: SettingDef = Settings[name];
    const isDefault = text === undefined || !isAccepted(def, text.trim());
    return Object.freeze({ name, def, value: parseSetting(name, text), raw: text, isDefault });
  });
}

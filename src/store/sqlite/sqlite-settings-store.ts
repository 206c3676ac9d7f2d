/** Platform settings: `system_config` rows in the registry database, read through common/settings.ts. */
import { parseSetting, type SettingName } from '../../common/settings.js';
import type { Db } from './db.js';
import {
  assertSettingName,
  type SettingValue,
  type SettingsStore,
  settingText,
  settingValues,
} from '../contracts/index.js';

export class SqliteSettingsStore implements SettingsStore {
  readonly #get;
  readonly #set;
  readonly #unset;

  constructor(db: Db) {
    this.#get = db.prepare<[string], { value: string }>('SELECT value FROM system_config WHERE key = ?');
    this.#set = db.prepare(
      'INSERT INTO system_config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
    this.#unset = db.prepare<[string]>('DELETE FROM system_config WHERE key = ?');
  }

  /** The value in force; an absent or unparseable row gives the documented default. */
  get(name: SettingName): number {
    return parseSetting(name, this.#get.get(name)?.value);
  }

  /** The stored text as written, or undefined. */
  raw(name: SettingName): string | undefined {
    return this.#get.get(name)?.value;
  }

  /**
   * Stores a value. Refuses an unknown name and a value the reader would not accept (it would
   * silently fall back to the default), so what is written is what takes effect.
   */
  set(name: string, value: number | string): void {
    this.#set.run(name, settingText(name, value));
  }

  /** Removes the stored row (the default is in force again); true when there was one. */
  unset(name: string): boolean {
    assertSettingName(name);
    return this.#unset.run(name).changes > 0;
  }

  /** Every known setting with the value in force, in catalogue order. */
  list(): SettingValue[] {
    return settingValues((name) => this.raw(name));
  }
}

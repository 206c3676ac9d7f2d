/** Platform settings (`system_config`) in the PostgreSQL store; parsing and checks are store/contracts/settings.ts's. */
import { parseSetting, type SettingName } from '../../common/settings.js';
import type { PgTx } from './pg-db.js';
import {
  assertSettingName,
  settingText,
  settingValues,
  type SettingsStore,
  type SettingValue,
} from '../contracts/index.js';

export class PgSettingsStore implements SettingsStore {
  constructor(private readonly db: PgTx) {}

  async get(name: SettingName): Promise<number> {
    return parseSetting(name, await this.raw(name));
  }

  async raw(name: SettingName): Promise<string | undefined> {
    return (await this.db.query<{ value: string }>('SELECT value FROM system_config WHERE key = $1', [name])).rows[0]
      ?.value;
  }

  async set(name: string, value: number | string): Promise<void> {
    const text = settingText(name, value);
    // Unchanged values are not rewritten, so they raise no change signal on every node.
    await this.db.query(
      'INSERT INTO system_config (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE system_config.value <> excluded.value',
      [name, text],
    );
  }

  async unset(name: string): Promise<boolean> {
    assertSettingName(name);
    return ((await this.db.query('DELETE FROM system_config WHERE key = $1', [name])).rowCount ?? 0) > 0;
  }

  async list(): Promise<SettingValue[]> {
    const rows = (await this.db.query<{ key: string; value: string }>('SELECT key, value FROM system_config')).rows;
    const stored = new Map(rows.map((r) => [r.key, r.value]));
    return settingValues((name) => stored.get(name));
  }
}

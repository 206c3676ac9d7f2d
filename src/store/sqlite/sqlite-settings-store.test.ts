import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSetting, Settings, type SettingName } from '../../common/settings.js';
import { openDb } from './db.js';
import { registryMigrations } from './migrations/registry.js';
import { SqliteSettingsStore } from './sqlite-settings-store.js';
import { isAccepted } from '../contracts/index.js';

describe('SqliteSettingsStore', () => {
  const setup = () => {
    const db = openDb(':memory:', registryMigrations);
    return { db, settings: new SqliteSettingsStore(db) };
  };

  it('gives the documented default when no row exists', () => {
    const { settings } = setup();
    assert.equal(settings.get('max_message_bytes'), 1_048_576);
    assert.equal(settings.get('log_retention_days'), 30);
  });

  it('reads back a value it stored', () => {
    const { settings } = setup();
    settings.set('log_retention_days', 7);
    assert.equal(settings.get('log_retention_days'), 7);
    settings.set('log_retention_days', '9');
    assert.equal(settings.get('log_retention_days'), 9);
    assert.equal(settings.raw('log_retention_days'), '9');
  });

  it('falls back to the default when a row written by hand cannot be parsed', () => {
    const { db, settings } = setup();
    for (const bad of ['abc', '-5', '0', '1.5', '', 'unlimited']) {
      db.prepare('INSERT OR REPLACE INTO system_config (key, value) VALUES (?, ?)').run('log_retention_days', bad);
      assert.equal(settings.get('log_retention_days'), 30, `value ${JSON.stringify(bad)}`);
      const listed = settings.list().find((s) => s.name === 'log_retention_days')!;
      assert.equal(listed.isDefault, true);
      assert.equal(listed.raw, bad);
    }
  });

  it('refuses to store an unknown name or a value the reader would ignore', () => {
    const { settings } = setup();
    assert.throws(() => settings.set('no_such_setting', 1), /unknown setting/);
    assert.throws(() => settings.set('log_retention_days', 0), /at least 1/);
    assert.throws(() => settings.set('log_retention_days', 2.5), /whole number/);
    assert.throws(() => settings.set('max_message_bytes', 'lots'), /whole number/);
    assert.equal(settings.raw('log_retention_days'), undefined);
  });

  it('lists every setting of the catalogue with the value in force', () => {
    const { settings } = setup();
    settings.set('cert_warning_days', 14);
    const list = settings.list();
    assert.deepEqual(
      list.map((s) => s.name),
      Object.keys(Settings),
    );
    const cert = list.find((s) => s.name === 'cert_warning_days')!;
    assert.equal(cert.value, 14);
    assert.equal(cert.isDefault, false);
  });

  it('accepts exactly the texts parseSetting reads as themselves', () => {
    for (const name of Object.keys(Settings) as SettingName[]) {
      for (const text of ['0', '1', '2', '007', '1.5', '1e3', '-1', ' 3', 'x', '99999999999999999999']) {
        const accepted = isAccepted(Settings[name], text);
        if (accepted) assert.equal(parseSetting(name, text), Number(text), `${name}=${text}`);
      }
    }
  });
});

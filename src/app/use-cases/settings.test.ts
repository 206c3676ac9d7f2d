import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SvcError } from '../../common/errors.js';
import { openDb } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteSettingsStore } from '../../store/sqlite/sqlite-settings-store.js';
import { changeSetting, listSettings } from './settings.js';

const store = () => new SqliteSettingsStore(openDb(':memory:', registryMigrations));
const inForce = async (s: SqliteSettingsStore, name: string) =>
  (await listSettings(s)).find((v) => v.name === name)?.value;

test("a sysadmin's change is stored and in force", async () => {
  const s = store();
  await changeSetting(s, { name: 'cert_warning_days', value: '12' }, { role: 'sysadmin', name: 'ui:admin' });
  assert.equal(await inForce(s, 'cert_warning_days'), 12);
  assert.equal(s.raw('cert_warning_days'), '12');
});

test('a role without edit_settings is refused and nothing is stored', async () => {
  const s = store();
  for (const role of ['support', 'developer'] as const) {
    await assert.rejects(
      changeSetting(s, { name: 'cert_warning_days', value: '12' }, { role, name: `ui:${role}` }),
      (err: unknown) => err instanceof SvcError && err.code === 'SVC_ERR_FORBIDDEN',
    );
  }
  assert.equal(s.raw('cert_warning_days'), undefined);
});

test('a value the reader would not take, or an unknown name, is refused and nothing is stored', async () => {
  const s = store();
  const admin = { role: 'sysadmin', name: 'ui:admin' } as const;
  for (const change of [
    { name: 'cert_warning_days', value: 'soon' },
    { name: 'no_such_setting', value: '1' },
  ]) {
    await assert.rejects(
      changeSetting(s, change, admin),
      (err: unknown) => err instanceof SvcError && err.code === 'SVC_ERR_INVALID_INPUT',
    );
  }
  assert.equal(s.raw('cert_warning_days'), undefined);
  assert.equal(await inForce(s, 'cert_warning_days'), 30);
});

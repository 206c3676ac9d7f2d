import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SvcError } from '../../common/errors.js';
import { openDb } from '../../store/sqlite/db.js';
import { auditMigrations } from '../../store/sqlite/migrations/audit.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteAuditStore } from '../../store/sqlite/sqlite-audit-store.js';
import { SqliteSettingsStore } from '../../store/sqlite/sqlite-settings-store.js';
import { PLATFORM_CHAIN } from './audit.js';
import { changeSetting, listSettings, takesEffect, unsetSetting } from './settings.js';

const stores = () => ({
  settings: new SqliteSettingsStore(openDb(':memory:', registryMigrations)),
  audit: new SqliteAuditStore(openDb(':memory:', auditMigrations)),
});
const inForce = async (s: SqliteSettingsStore, name: string) =>
  (await listSettings(s)).find((v) => v.name === name)?.value;
const admin = { role: 'sysadmin', name: 'ui:admin' } as const;
const platformEntries = (s: ReturnType<typeof stores>) =>
  s.audit.latest(PLATFORM_CHAIN, 100).map((e) => ({ type: e.eventType, payload: JSON.parse(e.payload) as unknown }));

test("a sysadmin's change is stored, in force, audited on the platform chain, and says when it takes effect", async () => {
  const s = stores();
  const r = await changeSetting(s, { name: 'cert_warning_days', value: '12' }, admin);
  assert.equal(await inForce(s.settings, 'cert_warning_days'), 12);
  assert.equal(s.settings.raw('cert_warning_days'), '12');
  assert.deepEqual(
    { from: r.from, to: r.to, changed: r.changed, value: r.value },
    { from: undefined, to: '12', changed: true, value: 12 },
  );
  assert.deepEqual(platformEntries(s), [
    { type: 'setting.changed', payload: { name: 'cert_warning_days', from: null, to: '12', actor: 'ui:admin' } },
  ]);
  assert.equal(s.audit.verify(PLATFORM_CHAIN).ok, true);
});

test('the same value again changes nothing and writes no audit entry', async () => {
  const s = stores();
  await changeSetting(s, { name: 'cert_warning_days', value: '12' }, admin);
  const again = await changeSetting(s, { name: 'cert_warning_days', value: ' 12 ' }, admin);
  assert.equal(again.changed, false);
  assert.equal(s.audit.count(PLATFORM_CHAIN), 1);
});

test('unset puts the default back in force, is audited with to: null, and a second unset changes nothing', async () => {
  const s = stores();
  await changeSetting(s, { name: 'cert_warning_days', value: '12' }, admin);
  const r = await unsetSetting(s, 'cert_warning_days', admin);
  assert.deepEqual(
    { from: r.from, to: r.to, changed: r.changed, value: r.value },
    {
      from: '12',
      to: undefined,
      changed: true,
      value: 30,
    },
  );
  assert.equal(s.settings.raw('cert_warning_days'), undefined);
  assert.deepEqual(platformEntries(s)[1], {
    type: 'setting.changed',
    payload: { name: 'cert_warning_days', from: '12', to: null, actor: 'ui:admin' },
  });
  assert.equal((await unsetSetting(s, 'cert_warning_days', admin)).changed, false);
  assert.equal(s.audit.count(PLATFORM_CHAIN), 2);
});

test('a role without edit_settings is refused and nothing is stored or audited', async () => {
  const s = stores();
  for (const role of ['support', 'developer'] as const) {
    const actor = { role, name: `ui:${role}` };
    for (const attempt of [
      () => changeSetting(s, { name: 'cert_warning_days', value: '12' }, actor),
      () => unsetSetting(s, 'cert_warning_days', actor),
    ])
      await assert.rejects(attempt(), (err: unknown) => err instanceof SvcError && err.code === 'SVC_ERR_FORBIDDEN');
  }
  assert.equal(s.settings.raw('cert_warning_days'), undefined);
  assert.equal(s.audit.count(PLATFORM_CHAIN), 0);
});

test('a value the reader would not take, or an unknown name, is refused and nothing is stored or audited', async () => {
  const s = stores();
  for (const attempt of [
    () => changeSetting(s, { name: 'cert_warning_days', value: 'soon' }, admin),
    () => changeSetting(s, { name: 'cert_warning_days', value: '-3' }, admin),
    () => changeSetting(s, { name: 'cert_warning_days', value: '' }, admin),
    () => changeSetting(s, { name: 'no_such_setting', value: '1' }, admin),
    () => changeSetting(s, { name: 'constructor', value: '1' }, admin),
    () => unsetSetting(s, 'no_such_setting', admin),
    () => unsetSetting(s, '__proto__', admin),
  ]) {
    await assert.rejects(attempt(), (err: unknown) => err instanceof SvcError && err.code === 'SVC_ERR_INVALID_INPUT');
  }
  assert.equal(s.settings.raw('cert_warning_days'), undefined);
  assert.equal(await inForce(s.settings, 'cert_warning_days'), 30);
  assert.equal(s.audit.count(PLATFORM_CHAIN), 0);
});

test('when a change takes effect follows when the setting is read', () => {
  assert.match(takesEffect('startup'), /next start/);
  assert.match(takesEffect('per-request'), /now/);
  assert.match(takesEffect('per-cycle'), /now/);
});

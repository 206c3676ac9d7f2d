import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SvcError } from '../../common/errors.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';
import { openDb } from './db.js';
import { auditMigrations } from './migrations/audit.js';
import { registryMigrations } from './migrations/registry.js';
import { SqliteTenantAdmin } from './sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from './sqlite-tenants-store.js';
import type { Tenant } from '../contracts/index.js';

function setup() {
  const tenants = new SqliteTenantsStore(openDb(':memory:', registryMigrations));
  const audit = new SqliteAuditStore(openDb(':memory:', auditMigrations));
  return { tenants, audit, admin: new SqliteTenantAdmin(tenants, audit) };
}

const NEW = { id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: '2030-01-31T08:00:00.000Z' };
const registered = { tenant: 'acme', eventType: 'tenant.registered', payload: { display_name: 'Acme' } };
const events = (audit: SqliteAuditStore) =>
  audit.latest('acme', 100).map((e) => [e.eventType, JSON.parse(e.payload) as unknown]);

describe('SqliteTenantAdmin', () => {
  it('createTenant stores an active tenant and appends its entry', async () => {
    const { tenants, audit, admin } = setup();
    const t = await admin.createTenant(NEW, registered);
    assert.deepEqual([t.id, t.displayName, t.status, t.authMethods], ['acme', 'Acme', 'active', ['api_key']]);
    assert.deepEqual(tenants.get('acme'), t);
    assert.deepEqual(events(audit), [['tenant.registered', { display_name: 'Acme' }]]);
  });

  it('createTenant refuses a taken id with SVC_ERR_CONFLICT and appends nothing', async () => {
    const { audit, admin } = setup();
    await admin.createTenant(NEW, registered);
    await assert.rejects(
      async () => admin.createTenant({ ...NEW, displayName: 'Other' }, registered),
      (err: SvcError) => err.code === 'SVC_ERR_CONFLICT',
    );
    assert.equal(audit.count('acme'), 1);
  });

  it('setTenantStatus changes the status and appends the entry made from the tenant as it was before', async () => {
    const { audit, admin } = setup();
    await admin.createTenant(NEW, registered);
    const seen: Tenant[] = [];
    const r = await admin.setTenantStatus('acme', 'disabled', (before) => {
      seen.push(before);
      return { tenant: 'acme', eventType: 'tenant.disabled', payload: { from: before.status } };
    });
    assert.deepEqual([r?.before.status, r?.after.status, r?.changed], ['active', 'disabled', true]);
    assert.deepEqual(
      seen.map((t) => t.status),
      ['active'],
    );
    assert.deepEqual(events(audit).at(-1), ['tenant.disabled', { from: 'active' }]);
  });

  it('setTenantStatus to the status the tenant has appends nothing and does not ask for an entry', async () => {
    const { audit, admin } = setup();
    await admin.createTenant(NEW, registered);
    const r = await admin.setTenantStatus('acme', 'active', () => assert.fail('no entry is made for a no-op'));
    assert.deepEqual([r?.before.status, r?.after.status, r?.changed], ['active', 'active', false]);
    assert.equal(audit.count('acme'), 1);
  });

  it('setTenantStatus of an unregistered tenant answers undefined and writes nothing', async () => {
    const { tenants, audit, admin } = setup();
    assert.equal(
      await admin.setTenantStatus('ghost', 'disabled', () => assert.fail('no entry for an unregistered tenant')),
      undefined,
    );
    assert.equal(tenants.get('ghost'), undefined);
    assert.equal(audit.count('ghost'), 0);
  });
});

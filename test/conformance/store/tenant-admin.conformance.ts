/** TenantAdmin: a tenant change and its audit entry as one step, on every backend. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackendKind } from './backend.js';
import { withStore } from './registry.conformance.js';

const NEW = { id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: '2030-01-31T08:00:00.000Z' };
const registered = { tenant: 'acme', eventType: 'tenant.registered', payload: { display_name: 'Acme' } };

export function tenantAdminConformance(kind: BackendKind): void {
  describe(`tenant admin (${kind.name})`, () => {
    test('createTenant stores the tenant and its entry; a taken id appends nothing', async () =>
      withStore(kind, async (s) => {
        const t = await s.tenantAdmin.createTenant(NEW, registered);
        assert.deepEqual(await s.tenants.get('acme'), t);
        await assert.rejects(async () => s.tenantAdmin.createTenant({ ...NEW, displayName: 'Other' }, registered), {
          code: 'SVC_ERR_CONFLICT',
        });
        assert.equal(await s.audit.count('acme'), 1);
      }));

    test('setTenantStatus: the entry is made from the tenant as it was; a no-op or an unknown tenant appends nothing', async () =>
      withStore(kind, async (s) => {
        await s.tenantAdmin.createTenant(NEW, registered);
        const entry = (before: { status: string }) => ({
          tenant: 'acme',
          eventType: 'tenant.disabled',
          payload: { from: before.status },
        });
        const r = await s.tenantAdmin.setTenantStatus('acme', 'disabled', entry);
        assert.deepEqual([r?.before.status, r?.after.status, r?.changed], ['active', 'disabled', true]);
        assert.equal((await s.tenantAdmin.setTenantStatus('acme', 'disabled', entry))?.changed, false);
        assert.equal(await s.tenantAdmin.setTenantStatus('nobody', 'disabled', entry), undefined);
        assert.deepEqual(
          (await s.audit.latest('acme', 10)).map((e) => [e.eventType, JSON.parse(e.payload) as unknown]),
          [
            ['tenant.registered', { display_name: 'Acme' }],
            ['tenant.disabled', { from: 'active' }],
          ],
        );
      }));

    test('the same change from several connections at once: exactly one changes it and writes an entry', async () => {
      const hs = await kind.openShared(3);
      try {
        await hs[0]!.tenantAdmin.createTenant(NEW, registered);
        const entry = () => ({ tenant: 'acme', eventType: 'tenant.disabled', payload: {} });
        const rs = await Promise.all(
          hs.flatMap((h) => [
            h.tenantAdmin.setTenantStatus('acme', 'disabled', entry),
            h.tenantAdmin.setTenantStatus('acme', 'disabled', entry),
          ]),
        );
        assert.equal(rs.filter((r) => r?.changed).length, 1);
        assert.equal(await hs[0]!.audit.count('acme'), 2);
        assert.equal((await hs[0]!.audit.verify('acme')).ok, true);
      } finally {
        for (const h of hs) await h.close();
      }
    });
  });
}

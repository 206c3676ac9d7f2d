import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sha256Hex } from '../../common/digest.js';
import { SvcError } from '../../common/errors.js';
import { SqliteArtifactsStore } from '../../store/sqlite/sqlite-artifacts-store.js';
import { SqliteAuditStore } from '../../store/sqlite/sqlite-audit-store.js';
import { openDb } from '../../store/sqlite/db.js';
import { auditMigrations } from '../../store/sqlite/migrations/audit.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteTenantAdmin } from '../../store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../../store/sqlite/sqlite-tenants-store.js';
import { SqliteTraceStore } from '../../store/sqlite/sqlite-traces-store.js';
import type { Actor } from '../accounts/roles.js';
import { createTenant } from './tenants.js';
import { setTraceFlag } from './trace.js';

async function setup() {
  const registry = openDb(':memory:', registryMigrations);
  const tenants = new SqliteTenantsStore(registry);
  const audit = new SqliteAuditStore(openDb(':memory:', auditMigrations));
  const deps = {
    traces: new SqliteTraceStore(registry),
    tenants,
    artifacts: new SqliteArtifactsStore(registry),
    audit,
    tenantAdmin: new SqliteTenantAdmin(tenants, audit),
  };
  await createTenant(deps, { id: 'acme', displayName: 'Acme' });
  deps.artifacts.publish({
    tenant: 'acme',
    name: 'orders',
    version: '1',
    bytes: '{}',
    hash: sha256Hex('{}'),
    createdAt: '2024-01-01T00:00:00Z',
  });
  return deps;
}

const as = (role: Actor['role']): Actor => ({ role, name: `ui:${role}` });
/** The tenant's trace_* audit entries, oldest first. */
const traceAudits = (deps: Awaited<ReturnType<typeof setup>>) =>
  deps.audit
    .latest('acme', 100)
    .filter((e) => e.eventType.startsWith('trace_'))
    .sort((a, b) => a.seq - b.seq);

describe('the trace flag', () => {
  it('only a sysadmin may toggle it; support and developer are refused with 403 and nothing changes', async () => {
    const deps = await setup();
    for (const role of ['support', 'developer'] as const) {
      await assert.rejects(
        () => setTraceFlag(deps, { tenant: 'acme', flow: 'orders', enabled: true }, as(role)),
        (err: SvcError) => err.status === 403 && err.message.includes(role),
      );
    }
    assert.deepEqual(deps.traces.list(), []);
    assert.deepEqual(traceAudits(deps), []);
  });

  it('follows the state table: off -> on (trace_enabled), same toggle (no row), on -> off (trace_disabled), naming the actor', async () => {
    const deps = await setup();
    const toggle = async (enabled: boolean) =>
      (await setTraceFlag(deps, { tenant: 'acme', flow: 'orders', enabled }, as('sysadmin'))).changed;
    assert.deepEqual(
      [await toggle(true), await toggle(true), await toggle(false), await toggle(false)],
      [true, false, true, false],
    );
    assert.deepEqual(
      traceAudits(deps).map((e) => [e.eventType, JSON.parse(e.payload)]),
      [
        ['trace_enabled', { flow: 'orders', actor: 'ui:sysadmin' }],
        ['trace_disabled', { flow: 'orders', actor: 'ui:sysadmin' }],
      ],
    );
    assert.equal(deps.traces.isEnabled('acme', 'orders'), false);
  });

  it('refuses a bad name, an unregistered tenant and a flow never deployed, changing nothing', async () => {
    const deps = await setup();
    for (const [tenant, flow, status] of [
      ['Acme', 'orders', 400],
      ['acme', 'no/pe', 400],
      ['globex', 'orders', 404],
      ['acme', 'missing', 404],
    ] as const) {
      await assert.rejects(
        () => setTraceFlag(deps, { tenant, flow, enabled: true }, as('sysadmin')),
        (err: SvcError) => err.status === status,
        `${tenant}/${flow}`,
      );
    }
    assert.deepEqual(deps.traces.list(), []);
  });
});

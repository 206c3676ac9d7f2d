import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SqliteArtifactsStore } from '../../store/sqlite/sqlite-artifacts-store.js';
import { SqliteAuditStore } from '../../store/sqlite/sqlite-audit-store.js';
import { openDb } from '../../store/sqlite/db.js';
import { auditMigrations } from '../../store/sqlite/migrations/audit.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteTenantAdmin } from '../../store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../../store/sqlite/sqlite-tenants-store.js';
import { devDeployFile, devVersionLabel } from './dev-deploy.js';
import { disableTenant } from './tenants.js';

const root = mkdtempSync(join(tmpdir(), 'svc-dev-unit-'));
after(() => rmSync(root, { recursive: true, force: true }));

const flowText = (tenant: string, greeting: string) =>
  `---\nflowdoc_version: "0.1"\nflow: hello\ntenant: ${tenant}\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "${greeting}"}\n\`\`\`\n`;

function deps() {
  const registry = openDb(':memory:', registryMigrations);
  const tenants = new SqliteTenantsStore(registry);
  const audit = new SqliteAuditStore(openDb(':memory:', auditMigrations));
  return {
    tenants,
    artifacts: new SqliteArtifactsStore(registry),
    audit,
    tenantAdmin: new SqliteTenantAdmin(tenants, audit),
  };
}

describe('devVersionLabel', () => {
  it('is dev-<UTC time to the millisecond>-<first 8 hex of the hash>', () => {
    assert.equal(
      devVersionLabel('1a2b3c4d5e6f', new Date('2026-01-31T08:00:00.123Z')),
      'dev-20260131T080000.123Z-1a2b3c4d',
    );
  });
});

describe('devDeployFile', () => {
  const file = join(root, 'hello.flow.md');
  const at = (ms: number) => new Date(Date.UTC(2026, 0, 31, 8, 0, 0, ms));

  it('registers a missing tenant, deploys, skips an unchanged save and deploys a changed one', async () => {
    const d = deps();
    writeFileSync(file, flowText('acme', 'one'));
    const first = await devDeployFile(d, { path: file }, at(1));
    assert.equal(first.kind, 'deployed');
    assert.ok(first.kind === 'deployed' && first.registeredTenant);
    assert.deepEqual(
      d.audit.latest('acme', 10).map((e) => [e.eventType, JSON.parse(e.payload).actor]),
      [['tenant.registered', 'svc dev']],
    );
    const again = await devDeployFile(d, { path: file }, at(2));
    assert.equal(again.kind, 'unchanged');
    assert.equal(again.kind === 'unchanged' && again.version, first.kind === 'deployed' && first.version);
    writeFileSync(file, flowText('acme', 'two'));
    const second = await devDeployFile(d, { path: file }, at(3));
    assert.ok(second.kind === 'deployed' && !second.registeredTenant);
    assert.deepEqual(
      d.artifacts.listVersions('acme', 'hello').map((v) => [v.version.replace(/[0-9a-f]{8}$/, 'HASH'), v.latest]),
      [
        ['dev-20260131T080000.001Z-HASH', false],
        ['dev-20260131T080000.003Z-HASH', true],
      ],
    );
  });

  it('reports every diagnostic of a broken file and publishes nothing', async () => {
    const d = deps();
    writeFileSync(
      file,
      '---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\ncolour: red\n---\n## Step: a\nsoap_version: 9\n',
    );
    const r = await devDeployFile(d, { path: file });
    assert.equal(r.kind, 'refused');
    const lines = r.kind === 'refused' ? r.diagnostics.map((x) => `${x.line}: ${x.step}: ${x.message}`) : [];
    assert.ok(lines.includes('5: front matter: unknown front-matter key "colour"'), lines.join('\n'));
    assert.ok(lines.includes('8: a: soap_version must be 1.1 or 1.2, got 9'), lines.join('\n'));
    assert.equal(d.tenants.get('acme'), undefined);
  });

  it('--tenant publishes under another tenant, with its own hash; a disabled tenant refuses', async () => {
    const d = deps();
    writeFileSync(file, flowText('acme', 'one'));
    const r = await devDeployFile(d, { path: file, tenant: 'sandbox' });
    assert.ok(r.kind === 'deployed' && r.tenant === 'sandbox');
    assert.equal(d.artifacts.resolveLatest('acme', 'hello'), undefined);
    const ir = JSON.parse(
      d.artifacts.getArtifact(d.artifacts.resolveLatest('sandbox', 'hello')!.hash)!.toString('utf8'),
    ) as { tenant: string };
    assert.equal(ir.tenant, 'sandbox');
    await disableTenant(d, 'sandbox');
    writeFileSync(file, flowText('acme', 'two'));
    await assert.rejects(() => devDeployFile(d, { path: file, tenant: 'sandbox' }), /tenant "sandbox" is disabled/);
  });
});

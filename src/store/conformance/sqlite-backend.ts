/** The embedded backend of the conformance suite: a real registry file in a temporary directory. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArtifactsRepo } from '../artifacts-repo.js';
import { AuditRepo } from '../audit-repo.js';
import { openDb } from '../db.js';
import { KeysRepo } from '../keys-repo.js';
import { auditMigrations } from '../migrations/audit.js';
import { registryMigrations } from '../migrations/registry.js';
import { SettingsRepo } from '../settings-repo.js';
import { TenantsRepo } from '../tenants-repo.js';
import { TraceRepo } from '../trace-repo.js';
import type { BackendKind, StoreBackend } from './backend.js';

/** The registry and the audit trail, each in its file of `dir`, as in a state directory. */
function openFiles(dir: string, cleanup: () => void): StoreBackend {
  const db = openDb(join(dir, 'registry.db'), registryMigrations);
  const auditDb = openDb(join(dir, 'audit.db'), auditMigrations);
  return {
    tenants: new TenantsRepo(db),
    keys: new KeysRepo(db),
    artifacts: new ArtifactsRepo(db),
    settings: new SettingsRepo(db),
    traces: new TraceRepo(db),
    audit: new AuditRepo(auditDb),
    auditSql: async (sql) => {
      auditDb.exec(sql);
    },
    close: async () => {
      db.close();
      auditDb.close();
      cleanup();
    },
  };
}

export const sqliteBackend: BackendKind = {
  name: 'sqlite',
  open: async () => (await sqliteBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-conf-'));
    let open = n;
    const cleanup = () => {
      if (--open === 0) rmSync(dir, { recursive: true, force: true });
    };
    return Array.from({ length: n }, () => openFiles(dir, cleanup));
  },
};

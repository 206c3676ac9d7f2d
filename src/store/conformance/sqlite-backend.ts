/** The embedded backend of the conformance suite: real `registry.db` and `ui.db` files in a temporary directory. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArtifactsRepo } from '../artifacts-repo.js';
import { CertificatesRepo } from '../certificates-repo.js';
import { AuditRepo } from '../audit-repo.js';
import { openDb } from '../db.js';
import { DescriptorsRepo } from '../descriptors-repo.js';
import { EventLog } from '../event-log.js';
import { EventLogRepo } from '../event-log-repo.js';
import { FlowStateRepo } from '../flow-state-repo.js';
import { KeysRepo } from '../keys-repo.js';
import { auditMigrations } from '../migrations/audit.js';
import { logMigrations } from '../migrations/log.js';
import { registryMigrations } from '../migrations/registry.js';
import { uiMigrations } from '../migrations/ui.js';
import { SettingsRepo } from '../settings-repo.js';
import { TenantAdminRepo } from '../tenant-admin-repo.js';
import { TenantsRepo } from '../tenants-repo.js';
import { TraceRepo } from '../trace-repo.js';
import { UiSessionsRepo } from '../ui-sessions-repo.js';
import { UiUsersRepo } from '../ui-users-repo.js';
import type { BackendKind, StoreBackend } from './backend.js';

/** The registry, the audit trail, the UI's accounts and the event log, each in its file of `dir`, as in a state directory. */
function openFiles(dir: string, cleanup: () => void): StoreBackend {
  const db = openDb(join(dir, 'registry.db'), registryMigrations);
  const uiDb = openDb(join(dir, 'ui.db'), uiMigrations);
  const auditDb = openDb(join(dir, 'audit.db'), auditMigrations);
  const tenants = new TenantsRepo(db);
  const audit = new AuditRepo(auditDb);
  const logDb = openDb(join(dir, 'log.db'), logMigrations);
  return {
    tenants,
    tenantAdmin: new TenantAdminRepo(tenants, audit),
    keys: new KeysRepo(db),
    artifacts: new ArtifactsRepo(db),
    settings: new SettingsRepo(db),
    traces: new TraceRepo(db),
    uiUsers: new UiUsersRepo(uiDb),
    uiSessions: new UiSessionsRepo(uiDb),
    certificates: new CertificatesRepo(db),
    descriptors: new DescriptorsRepo(db),
    flowState: new FlowStateRepo(db),
    audit,
    auditSql: async (sql) => {
      auditDb.exec(sql);
    },
    eventLog: new EventLogRepo(logDb),
    openEventWriter: (opts = {}) => new EventLog({ ...opts, logDb: join(dir, 'log.db'), logsDir: join(dir, 'logs'), inline: true }),
    eventSql: async (sql) => logDb.prepare(sql).all() as Record<string, unknown>[],
    close: async () => {
      db.close();
      uiDb.close();
      auditDb.close();
      logDb.close();
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

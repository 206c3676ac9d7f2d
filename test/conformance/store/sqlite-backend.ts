/** The embedded backend of the conformance suite: real `registry.db` and `ui.db` files in a temporary directory. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteArtifactsStore } from '../../../src/store/sqlite/sqlite-artifacts-store.js';
import { SqliteCertificatesStore } from '../../../src/store/sqlite/sqlite-certificates-store.js';
import { SqliteAuditStore } from '../../../src/store/sqlite/sqlite-audit-store.js';
import { openDb } from '../../../src/store/sqlite/db.js';
import { SqliteDescriptorsStore } from '../../../src/store/sqlite/sqlite-descriptors-store.js';
import { EventLog } from '../../../src/store/event-log/event-log.js';
import { SqliteEventLogStore } from '../../../src/store/sqlite/sqlite-event-log-store.js';
import { SqliteFlowStateStore } from '../../../src/store/sqlite/sqlite-flow-state-store.js';
import { SqliteKeysStore } from '../../../src/store/sqlite/sqlite-keys-store.js';
import { auditMigrations } from '../../../src/store/sqlite/migrations/audit.js';
import { logMigrations } from '../../../src/store/sqlite/migrations/log.js';
import { registryMigrations } from '../../../src/store/sqlite/migrations/registry.js';
import { uiMigrations } from '../../../src/store/sqlite/migrations/ui.js';
import { SqliteSettingsStore } from '../../../src/store/sqlite/sqlite-settings-store.js';
import { SqliteTenantAdmin } from '../../../src/store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../../../src/store/sqlite/sqlite-tenants-store.js';
import { SqliteTraceStore } from '../../../src/store/sqlite/sqlite-traces-store.js';
import { SqliteUiSessionsStore } from '../../../src/store/sqlite/sqlite-ui-sessions-store.js';
import { SqliteUiUsersStore } from '../../../src/store/sqlite/sqlite-ui-users-store.js';
import type { BackendKind, StoreBackend } from './backend.js';

/** The registry, the audit trail, the UI's accounts and the event log, each in its file of `dir`, as in a state directory. */
function openFiles(dir: string, cleanup: () => void): StoreBackend {
  const db = openDb(join(dir, 'registry.db'), registryMigrations);
  const uiDb = openDb(join(dir, 'ui.db'), uiMigrations);
  const auditDb = openDb(join(dir, 'audit.db'), auditMigrations);
  const tenants = new SqliteTenantsStore(db);
  const audit = new SqliteAuditStore(auditDb);
  const logDb = openDb(join(dir, 'log.db'), logMigrations);
  return {
    tenants,
    tenantAdmin: new SqliteTenantAdmin(tenants, audit),
    keys: new SqliteKeysStore(db),
    artifacts: new SqliteArtifactsStore(db),
    settings: new SqliteSettingsStore(db),
    traces: new SqliteTraceStore(db),
    uiUsers: new SqliteUiUsersStore(uiDb),
    uiSessions: new SqliteUiSessionsStore(uiDb),
    certificates: new SqliteCertificatesStore(db),
    descriptors: new SqliteDescriptorsStore(db),
    flowState: new SqliteFlowStateStore(db),
    audit,
    auditSql: async (sql) => {
      auditDb.exec(sql);
    },
    eventLog: new SqliteEventLogStore(logDb),
    openEventWriter: (opts = {}) =>
      new EventLog({ ...opts, logDb: join(dir, 'log.db'), logsDir: join(dir, 'logs'), inline: true }),
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

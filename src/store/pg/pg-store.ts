/**
 * The PostgreSQL store opened: the pool, the schema migrated, and one object per aggregate. The
 * counterpart of opening the SQLite state directory.
 */
import { migratePg } from './migrate.js';
import { PgArtifactsStore } from './pg-artifacts-store.js';
import { PgCertificatesStore } from './pg-certificates-store.js';
import { PgAuditStore } from './pg-audit-store.js';
import { PgDb, type PgDbOptions } from './pg-db.js';
import { PgDescriptorsStore } from './pg-descriptors-store.js';
import { PgEventLogStore } from './pg-event-log-store.js';
import { PgFlowStateStore } from './pg-flow-state-store.js';
import { PgKeysStore } from './pg-keys-store.js';
import { PgSettingsStore } from './pg-settings-store.js';
import { PgTenantAdmin } from './pg-tenant-admin.js';
import { PgTenantsStore } from './pg-tenants-store.js';
import { PgTraceStore } from './pg-trace-store.js';
import { PgUiSessionsStore } from './pg-ui-sessions-store.js';
import { PgUiUsersStore } from './pg-ui-users-store.js';
import { parseStoreUrl } from './store-url.js';

export interface PgStore {
  readonly db: PgDb;
  readonly tenants: PgTenantsStore;
  readonly keys: PgKeysStore;
  readonly artifacts: PgArtifactsStore;
  readonly settings: PgSettingsStore;
  readonly traces: PgTraceStore;
  readonly uiUsers: PgUiUsersStore;
  readonly uiSessions: PgUiSessionsStore;
  readonly certificates: PgCertificatesStore;
  readonly descriptors: PgDescriptorsStore;
  readonly flowState: PgFlowStateStore;
  readonly audit: PgAuditStore;
  readonly tenantAdmin: PgTenantAdmin;
  /** The event log's read side; its rows are written by an EventLog given `pg: db`. */
  readonly events: PgEventLogStore;
  close(): Promise<void>;
}

/** Connects, applies pending migrations (or refuses a newer schema), and builds the stores. */
export async function openPgStore(url: string, opts: PgDbOptions = {}): Promise<PgStore> {
  const db = new PgDb(parseStoreUrl(url), opts);
  try {
    await migratePg(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return {
    db,
    tenants: new PgTenantsStore(db),
    keys: new PgKeysStore(db),
    artifacts: new PgArtifactsStore(db),
    settings: new PgSettingsStore(db),
    traces: new PgTraceStore(db),
    uiUsers: new PgUiUsersStore(db),
    uiSessions: new PgUiSessionsStore(db),
    certificates: new PgCertificatesStore(db),
    descriptors: new PgDescriptorsStore(db),
    flowState: new PgFlowStateStore(db),
    audit: new PgAuditStore(db),
    tenantAdmin: new PgTenantAdmin(db),
    events: new PgEventLogStore(db),
    close: () => db.close(),
  };
}

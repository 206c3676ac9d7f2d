/** The state directory of `svc serve` opened: the registry and its repositories, the event log and the audit writer. */
import { mkdirSync } from 'node:fs';
import { FlowLoader } from '../app/runtime/flow-loader.js';
import type { Logger } from '../common/logger.js';
import type { StatePaths } from '../common/paths.js';
import type { SettingName } from '../common/settings.js';
import { SqliteArtifactsStore } from '../store/sqlite/sqlite-artifacts-store.js';
import { AuditThreadWriter } from '../store/audit/audit-thread.js';
import { openDb, type Db } from '../store/sqlite/db.js';
import { EventLog } from '../store/event-log/event-log.js';
import { SqliteEventLogStore } from '../store/sqlite/sqlite-event-log-store.js';
import { SqliteAuditStore } from '../store/sqlite/sqlite-audit-store.js';
import { uiMigrations } from '../store/sqlite/migrations/ui.js';
import { SqliteUiSessionsStore } from '../store/sqlite/sqlite-ui-sessions-store.js';
import { SqliteUiUsersStore } from '../store/sqlite/sqlite-ui-users-store.js';
import { SqliteFlowStateStore } from '../store/sqlite/sqlite-flow-state-store.js';
import { SqliteKeysStore } from '../store/sqlite/sqlite-keys-store.js';
import { auditMigrations } from '../store/sqlite/migrations/audit.js';
import { registryMigrations } from '../store/sqlite/migrations/registry.js';
import { RegistryCache } from '../store/sqlite/registry-cache.js';
import { SqliteSettingsStore } from '../store/sqlite/sqlite-settings-store.js';
import { SqliteTenantAdmin } from '../store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../store/sqlite/sqlite-tenants-store.js';
import { SqliteTraceStore } from '../store/sqlite/sqlite-traces-store.js';
import { SqliteCertificatesStore } from '../store/sqlite/sqlite-certificates-store.js';
import type {
  ArtifactsStore,
  AuditStore,
  CertificatesStore,
  EventLogStore,
  FlowStateStore,
  KeysStore,
  SettingsStore,
  TenantAdmin,
  TenantsStore,
  TraceStore,
  UiSessionsStore,
  UiUsersStore,
  RegistryReads,
  DescriptorReads,
} from '../store/contracts/index.js';
import type { AuditAppender } from '../store/audit/audit-thread.js';
import type { ReclaimOptions, ReclaimResult } from '../store/sqlite/auto-vacuum.js';
import type { PgDb } from '../store/pg/pg-db.js';
import type { Closers } from './closers.js';

/**
 * The stores `svc serve` runs on, whichever database holds them: every aggregate behind its
 * storage contract (store/contracts.ts), and the request path's reads from memory (`cache`,
 * `flows`). Opened by openStores (the state directory) or openPgStores (serve/pg-stores.ts).
 */
export interface ServeStores {
  readonly kind: 'sqlite' | 'postgres';
  /** The SQLite registry (the gRPC door's descriptors and their change counter); undefined on PostgreSQL. */
  readonly registry: Db | undefined;
  readonly settings: SettingsStore;
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly traces: TraceStore;
  readonly certificates: CertificatesStore;
  /** Keys, tenants, `latest`, trace flags and settings from memory, revalidated by a change signal. */
  readonly cache: RegistryReads;
  /** Latest artifacts, verified and parsed once per hash. */
  readonly flows: FlowLoader;
  readonly flowState: FlowStateStore;
  /** SQLite only: gives the registry's free pages back after a flow-state purge. */
  readonly reclaimFlowStatePages?: (opts: ReclaimOptions) => Promise<ReclaimResult>;
  readonly events: EventLog;
  readonly audit: AuditAppender & { readonly queuedEntries: number };
  /** The audit chains read and appended in-line (the UI's changes and its Audit page). */
  readonly auditRepo: AuditStore;
  /** Tenant registration and status changes with their audit entries (the UI's and `svc seed`'s). */
  readonly tenantAdmin: TenantAdmin;
  /** The event log's read side (the UI). Retention runs on the writer (`events`). */
  readonly logRepo: EventLogStore;
  readonly uiUsers: UiUsersStore;
  readonly uiSessions: UiSessionsStore;
  /** On PostgreSQL: the latest descriptors from the registry copy (the gRPC door); on SQLite the door opens the repository. */
  readonly descriptorReads?: DescriptorReads;
  /** The PostgreSQL pool, on PostgreSQL (the queues and the cluster's locks use it too). */
  readonly pg?: PgDb;
  /** A platform setting as the registry holds it now (cached). */
  setting(name: SettingName): number;
}

/** Opens (and migrates) every store; each is closed by `closers` in reverse order. */
/** Told of each writer batch (metrics). */
export interface WriterHooks {
  eventBatchWritten(rows: number, seconds: number): void;
  auditBatchWritten(entries: number, seconds: number): void;
}

export function openStores(paths: StatePaths, log: Logger, closers: Closers, hooks?: WriterHooks): ServeStores {
  for (const dir of [paths.stateDir, paths.queuesDir, paths.logsDir]) mkdirSync(dir, { recursive: true });
  const registry = openDb(paths.registryDb, registryMigrations);
  closers.add(() => registry.close());
  // Opened (and migrated) before the audit writer thread starts, so a broken audit database stops the start.
  const auditDb = openDb(paths.auditDb, auditMigrations);
  closers.add(() => auditDb.close());

  const artifacts = new SqliteArtifactsStore(registry);
  const settings = new SqliteSettingsStore(registry);
  const tenants = new SqliteTenantsStore(registry);
  const keys = new SqliteKeysStore(registry);
  const traces = new SqliteTraceStore(registry);
  const cache = new RegistryCache(registry, { keys, tenants, artifacts, traces, settings });
  closers.add(() => cache.close());
  const setting = (name: SettingName) => cache.setting(name);
  const flows = new FlowLoader(artifacts, (tenant, name) => cache.resolveLatest(tenant, name));

  const events = EventLog.open(paths, {
    flushIntervalMs: 100,
    maxBatchRows: 4096,
    payloadMaxBytes: () => setting('log_payload_max_bytes'),
    onError: (err) => log.error({ err }, 'event log write failed'),
    onBatchWritten: hooks?.eventBatchWritten,
  });
  closers.add(() => events.close());
  const audit = new AuditThreadWriter(paths.auditDb, {
    flushIntervalMs: 100,
    onError: (message) => log.error(message),
    onBatchWritten: hooks?.auditBatchWritten,
  });
  closers.add(() => audit.close());
  const logRepo = SqliteEventLogStore.open(paths.logDb);
  logRepo.tuneForScans();
  closers.add(() => logRepo.close());
  const auditRepo = new SqliteAuditStore(auditDb);
  const uiDb = openDb(paths.uiDb, uiMigrations);
  closers.add(() => uiDb.close());
  const flowState = new SqliteFlowStateStore(registry);
  return {
    kind: 'sqlite',
    registry,
    settings,
    tenants,
    keys,
    artifacts,
    traces,
    certificates: new SqliteCertificatesStore(registry),
    cache,
    flows,
    flowState,
    reclaimFlowStatePages: (opts) => flowState.reclaimFreePages(opts),
    events,
    audit,
    auditRepo,
    tenantAdmin: new SqliteTenantAdmin(tenants, auditRepo),
    logRepo,
    uiUsers: new SqliteUiUsersStore(uiDb),
    uiSessions: new SqliteUiSessionsStore(uiDb),
    setting,
  };
}

/** The state directory of `svc serve` opened: the registry and its repositories, the event log and the audit writer. */
import { mkdirSync } from 'node:fs';
import { FlowLoader } from '../app/flow-loader.js';
import type { Logger } from '../common/logger.js';
import type { StatePaths } from '../common/paths.js';
import type { SettingName } from '../common/settings.js';
import { ArtifactsRepo } from '../store/artifacts-repo.js';
import { AuditThreadWriter } from '../store/audit-thread.js';
import { openDb, type Db } from '../store/db.js';
import { EventLog } from '../store/event-log.js';
import { EventLogRepo } from '../store/event-log-repo.js';
import { AuditRepo } from '../store/audit-repo.js';
import { uiMigrations } from '../store/migrations/ui.js';
import { UiSessionsRepo } from '../store/ui-sessions-repo.js';
import { UiUsersRepo } from '../store/ui-users-repo.js';
import { FlowStateRepo } from '../store/flow-state-repo.js';
import { KeysRepo } from '../store/keys-repo.js';
import { auditMigrations } from '../store/migrations/audit.js';
import { registryMigrations } from '../store/migrations/registry.js';
import { RegistryCache, type RegistryReads } from '../store/registry-cache.js';
import { SettingsRepo } from '../store/settings-repo.js';
import { TenantAdminRepo } from '../store/tenant-admin-repo.js';
import { TenantsRepo } from '../store/tenants-repo.js';
import { TraceRepo } from '../store/trace-repo.js';
import { CertificatesRepo } from '../store/certificates-repo.js';
import type { ArtifactsStore, AuditStore, CertificatesStore, EventLogStore, FlowStateStore, KeysStore, SettingsStore, TenantAdmin, TenantsStore, TraceStore, UiSessionsStore, UiUsersStore } from '../store/contracts.js';
import type { AuditAppender } from '../store/audit-thread.js';
import type { ReclaimOptions, ReclaimResult } from '../store/auto-vacuum.js';
import type { PgDb } from '../store/pg/pg-db.js';
import type { DescriptorReads } from '../store/descriptors-repo.js';
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

  const artifacts = new ArtifactsRepo(registry);
  const settings = new SettingsRepo(registry);
  const tenants = new TenantsRepo(registry);
  const keys = new KeysRepo(registry);
  const traces = new TraceRepo(registry);
  const cache = new RegistryCache(registry, { keys, tenants, artifacts, traces, settings });
  closers.add(() => cache.close());
  const setting = (name: SettingName) => cache.setting(name);
  const flows = new FlowLoader(artifacts, (tenant, name) => cache.resolveLatest(tenant, name));

  const events = EventLog.open(paths, { flushIntervalMs: 100, maxBatchRows: 4096, payloadMaxBytes: () => setting('log_payload_max_bytes'), onError: (err) => log.error({ err }, 'event log write failed'), onBatchWritten: hooks?.eventBatchWritten });
  closers.add(() => events.close());
  const audit = new AuditThreadWriter(paths.auditDb, { flushIntervalMs: 100, onError: (message) => log.error(message), onBatchWritten: hooks?.auditBatchWritten });
  closers.add(() => audit.close());
  const logRepo = EventLogRepo.open(paths.logDb);
  logRepo.tuneForScans();
  closers.add(() => logRepo.close());
  const auditRepo = new AuditRepo(auditDb);
  const uiDb = openDb(paths.uiDb, uiMigrations);
  closers.add(() => uiDb.close());
  const flowState = new FlowStateRepo(registry);
  return {
    kind: 'sqlite',
    registry,
    settings,
    tenants,
    keys,
    artifacts,
    traces,
    certificates: new CertificatesRepo(registry),
    cache,
    flows,
    flowState,
    reclaimFlowStatePages: (opts) => flowState.reclaimFreePages(opts),
    events,
    audit,
    auditRepo,
    tenantAdmin: new TenantAdminRepo(tenants, auditRepo),
    logRepo,
    uiUsers: new UiUsersRepo(uiDb),
    uiSessions: new UiSessionsRepo(uiDb),
    setting,
  };
}

/**
 * openStore: the ONE place a target becomes storage. A state directory (the `--db` registry path;
 * its directory holds registry.db, audit.db, ui.db, log.db and queues/) or a `postgres://` URL
 * (`--store`, SVC_STORE_URL) is opened into every store behind its contract and the queue backend,
 * with one close(). `svc serve`, every CLI command and the conformance suites open storage here.
 */
import { existsSync } from 'node:fs';
import { statePaths, type StatePaths } from '../common/paths.js';
import { FileQueueStore } from '../queue/file/file-queue-store.js';
import type { QueueStore } from '../queue/contract.js';
import type { PgQueueStore, PgQueueStoreOptions } from '../queue/pg/pg-queue-store.js';
import type {
  ArtifactsStore,
  AuditStore,
  CertificatesStore,
  DescriptorsStore,
  EventLogStore,
  FlowStateStore,
  KeysStore,
  SettingsStore,
  TenantAdmin,
  TenantsStore,
  TraceStore,
  UiSessionsStore,
  UiUsersStore,
} from '../store/contracts/index.js';
import type { PgDb, PgDbOptions } from '../store/pg/pg-db.js';
import { isPostgresUrl, parseStoreUrl } from '../store/pg/store-url.js';
import { openDb, type Db, type Migration } from '../store/sqlite/db.js';
import { auditMigrations } from '../store/sqlite/migrations/audit.js';
import { logMigrations } from '../store/sqlite/migrations/log.js';
import { registryMigrations } from '../store/sqlite/migrations/registry.js';
import { uiMigrations } from '../store/sqlite/migrations/ui.js';
import { SqliteArtifactsStore } from '../store/sqlite/sqlite-artifacts-store.js';
import { SqliteAuditStore } from '../store/sqlite/sqlite-audit-store.js';
import { SqliteCertificatesStore } from '../store/sqlite/sqlite-certificates-store.js';
import { SqliteDescriptorsStore } from '../store/sqlite/sqlite-descriptors-store.js';
import { SqliteEventLogStore } from '../store/sqlite/sqlite-event-log-store.js';
import { SqliteFlowStateStore } from '../store/sqlite/sqlite-flow-state-store.js';
import { SqliteKeysStore } from '../store/sqlite/sqlite-keys-store.js';
import { SqliteSettingsStore } from '../store/sqlite/sqlite-settings-store.js';
import { SqliteTenantAdmin } from '../store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../store/sqlite/sqlite-tenants-store.js';
import { SqliteTraceStore } from '../store/sqlite/sqlite-traces-store.js';
import { SqliteUiSessionsStore } from '../store/sqlite/sqlite-ui-sessions-store.js';
import { SqliteUiUsersStore } from '../store/sqlite/sqlite-ui-users-store.js';

/** The parts of a store whose database may not exist yet (always there on PostgreSQL). */
export type StorePart = 'registry' | 'audit' | 'ui' | 'log';

/** Every store of one target behind its contract, and the queue backend; closed once by close(). */
export interface Stores {
  readonly kind: 'sqlite' | 'postgres';
  /** Where the registry is, for messages: the registry file, or the store URL without its password. */
  readonly location: string;
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly settings: SettingsStore;
  readonly traces: TraceStore;
  readonly certificates: CertificatesStore;
  readonly descriptors: DescriptorsStore;
  readonly flowState: FlowStateStore;
  readonly audit: AuditStore;
  /** Tenant registration and status changes with their audit entries. */
  readonly tenantAdmin: TenantAdmin;
  /** The event log's read side (its rows are written by an EventLog). */
  readonly eventLog: EventLogStore;
  readonly uiUsers: UiUsersStore;
  readonly uiSessions: UiSessionsStore;
  readonly queues: QueueStore;
  /** What only a store several nodes share has (PostgreSQL); undefined on a state directory. */
  readonly cluster: ClusterStore | undefined;
  /** Whether the database of `part` exists already, so that a read can skip one that was never written. */
  has(part: StorePart): boolean;
  /** Closes what was opened (the queue backend first, the databases last), every step even when one fails. */
  close(): Promise<void>;
}

/**
 * The cluster's own bookkeeping on a shared store: each cron tick claimed by one node, and the
 * registry change log (which every node's registry copy follows) pruned.
 */
export interface ClusterStore {
  /** True when this node claimed the tick (it runs it); false when another node did. */
  claimScheduleTick(tenant: string, flow: string, tickAt: string, node: string): Promise<boolean>;
  /** Deletes change-log entries older than `keepMs`; returns how many. */
  pruneRegistryChanges(keepMs: number): Promise<number>;
}

/** A state directory opened: each database file is opened (created, migrated) when first used. */
export interface SqliteStores extends Stores {
  readonly kind: 'sqlite';
  readonly paths: StatePaths;
  /** The registry database (serve's in-memory reads revalidate on its change counter). */
  readonly registry: Db;
  /** The database of `part`, opened at this first use (the conformance suite's inspection). */
  database(part: StorePart): Db;
  readonly tenants: SqliteTenantsStore;
  readonly keys: SqliteKeysStore;
  readonly artifacts: SqliteArtifactsStore;
  readonly settings: SqliteSettingsStore;
  readonly traces: SqliteTraceStore;
  readonly certificates: SqliteCertificatesStore;
  /** Also the gRPC door's synchronous descriptor reads (DescriptorReads). */
  readonly descriptors: SqliteDescriptorsStore;
  readonly flowState: SqliteFlowStateStore;
  readonly audit: SqliteAuditStore;
  readonly tenantAdmin: SqliteTenantAdmin;
  readonly eventLog: SqliteEventLogStore;
  readonly queues: FileQueueStore;
  readonly cluster: undefined;
}

/** A PostgreSQL store opened: the pool, the schema migrated. */
export interface PgStores extends Stores {
  readonly kind: 'postgres';
  /** The pool (serve's registry mirror, writers and cluster locks use it too). */
  readonly db: PgDb;
  /** Also this node's lease (its cluster-wide locks). */
  readonly queues: PgQueueStore;
  readonly cluster: ClusterStore;
}

export type OpenedStore = SqliteStores | PgStores;

export interface OpenStoreOptions {
  /**
   * A state directory is only read: a missing database reads as an empty one (in memory) and no
   * file is created, so a mistyped `--db` leaves nothing behind. No effect on PostgreSQL. @default false
   */
  readonly readOnly?: boolean;
  /** The PostgreSQL pool (size, application name, timeouts). @default PgDb's defaults */
  readonly pg?: PgDbOptions;
  /** The queue backend's options. */
  readonly queues?: QueueOptions;
}

export interface QueueOptions {
  /** State directory: message ids reserved per block (1: a short command wastes none). @default 1024 */
  readonly idBlockSize?: number;
  /** PostgreSQL: this node's lease of its queue locks. */
  readonly lease?: PgQueueStoreOptions['lease'];
  /** PostgreSQL: told when the lease session was lost. */
  readonly onLeaseLost?: (err: Error) => void;
}

/** Opens `target`: a `postgres://` URL (migrated now; a newer schema refused) or the registry path of a state directory. */
export async function openStore(target: string, opts: OpenStoreOptions = {}): Promise<OpenedStore> {
  return isPostgresUrl(target) ? openPg(target, opts) : openStateDir(target, opts);
}

/** Runs `close` steps in reverse order of opening, each even when one before it failed; throws the first failure. */
class Closing {
  readonly #steps: (() => unknown)[] = [];

  add(step: () => unknown): void {
    this.#steps.push(step);
  }

  async run(): Promise<void> {
    let failure: unknown;
    for (const step of this.#steps.splice(0).reverse()) {
      try {
        await step();
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  }
}

/** A value made at its first use. */
function lazy<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

function openStateDir(dbPath: string, opts: OpenStoreOptions): SqliteStores {
  const paths = statePaths(dbPath);
  const closing = new Closing();
  const file = (path: string, migrations: readonly Migration[]) =>
    lazy(() => {
      // Read-only use of a missing file reads an empty in-memory database instead of creating it.
      const db =
        opts.readOnly === true && !existsSync(path) ? openDb(':memory:', migrations) : openDb(path, migrations);
      closing.add(() => db.close());
      return db;
    });
  const registry = file(paths.registryDb, registryMigrations);
  const auditDb = file(paths.auditDb, auditMigrations);
  const uiDb = file(paths.uiDb, uiMigrations);
  const logDb = file(paths.logDb, logMigrations);
  const closed = <T extends { close(): unknown }>(make: () => T) =>
    lazy(() => {
      const made = make();
      closing.add(() => made.close());
      return made;
    });
  const tenants = lazy(() => new SqliteTenantsStore(registry()));
  const keys = lazy(() => new SqliteKeysStore(registry()));
  const artifacts = lazy(() => new SqliteArtifactsStore(registry()));
  const settings = lazy(() => new SqliteSettingsStore(registry()));
  const traces = lazy(() => new SqliteTraceStore(registry()));
  const certificates = lazy(() => new SqliteCertificatesStore(registry()));
  // Its change counter (the gRPC door's) is opened by the first changeToken() and closed here.
  const descriptors = closed(() => new SqliteDescriptorsStore(registry()));
  const flowState = lazy(() => new SqliteFlowStateStore(registry()));
  const audit = lazy(() => new SqliteAuditStore(auditDb()));
  const tenantAdmin = lazy(() => new SqliteTenantAdmin(tenants(), audit()));
  const eventLog = lazy(() => new SqliteEventLogStore(logDb()));
  const uiUsers = lazy(() => new SqliteUiUsersStore(uiDb()));
  const uiSessions = lazy(() => new SqliteUiSessionsStore(uiDb()));
  const queues = closed(
    () =>
      new FileQueueStore({
        queuesDir: paths.queuesDir,
        ...(opts.queues?.idBlockSize === undefined ? {} : { idBlockSize: opts.queues.idBlockSize }),
      }),
  );
  const fileOf: Record<StorePart, string> = {
    registry: paths.registryDb,
    audit: paths.auditDb,
    ui: paths.uiDb,
    log: paths.logDb,
  };
  return {
    kind: 'sqlite',
    location: paths.registryDb,
    cluster: undefined,
    paths,
    get registry() {
      return registry();
    },
    get tenants() {
      return tenants();
    },
    get keys() {
      return keys();
    },
    get artifacts() {
      return artifacts();
    },
    get settings() {
      return settings();
    },
    get traces() {
      return traces();
    },
    get certificates() {
      return certificates();
    },
    get descriptors() {
      return descriptors();
    },
    get flowState() {
      return flowState();
    },
    get audit() {
      return audit();
    },
    get tenantAdmin() {
      return tenantAdmin();
    },
    get eventLog() {
      return eventLog();
    },
    get uiUsers() {
      return uiUsers();
    },
    get uiSessions() {
      return uiSessions();
    },
    get queues() {
      return queues();
    },
    database: (part) => ({ registry, audit: auditDb, ui: uiDb, log: logDb })[part](),
    has: (part) => existsSync(fileOf[part]),
    close: () => closing.run(),
  };
}

async function openPg(url: string, opts: OpenStoreOptions): Promise<PgStores> {
  // Loaded only here: a command on the state directory never loads the PostgreSQL client.
  const [{ openPgStore }, { PgQueueStore }, { claimScheduleTick }, { pruneRegistryChanges }] = await Promise.all([
    import('../store/pg/pg-store.js'),
    import('../queue/pg/pg-queue-store.js'),
    import('../store/pg/pg-schedule-ticks.js'),
    import('../store/pg/pg-registry-mirror.js'),
  ]);
  const pg = await openPgStore(url, opts.pg);
  const closing = new Closing();
  closing.add(() => pg.close());
  const queues = lazy(() => {
    const q = new PgQueueStore(pg.db, {
      ...(opts.queues?.lease === undefined ? {} : { lease: opts.queues.lease }),
      ...(opts.queues?.onLeaseLost === undefined ? {} : { onLeaseLost: opts.queues.onLeaseLost }),
    });
    closing.add(() => q.close());
    return q;
  });
  return {
    kind: 'postgres',
    location: parseStoreUrl(url).redacted,
    db: pg.db,
    tenants: pg.tenants,
    keys: pg.keys,
    artifacts: pg.artifacts,
    settings: pg.settings,
    traces: pg.traces,
    certificates: pg.certificates,
    descriptors: pg.descriptors,
    flowState: pg.flowState,
    audit: pg.audit,
    tenantAdmin: pg.tenantAdmin,
    eventLog: pg.events,
    uiUsers: pg.uiUsers,
    uiSessions: pg.uiSessions,
    get queues() {
      return queues();
    },
    cluster: {
      claimScheduleTick: (tenant, flow, tickAt, node) => claimScheduleTick(pg.db, tenant, flow, tickAt, node),
      pruneRegistryChanges: (keepMs) => pruneRegistryChanges(pg.db, keepMs),
    },
    has: () => true,
    close: () => closing.run(),
  };
}

/**
 * Opens the stores an operator command needs, from `--db` (the SQLite state directory) or from
 * `--store` (the PostgreSQL store: opened once, its schema migrated, closed after), and closes them
 * whatever happens: when `fn` returns a promise (a use case written against the storage contracts),
 * once it settles. The commands get the stores as their contracts and work the same on both.
 */
import { existsSync } from 'node:fs';
import { statePaths } from '../common/paths.js';
import { pgStoreMarker, stateDirMarker, type DevStateMarker } from '../app/maintenance/dev-state.js';
import type { DlqTarget } from '../app/use-cases/dlq.js';
import { SqliteArtifactsStore } from '../store/sqlite/sqlite-artifacts-store.js';
import { SqliteAuditStore } from '../store/sqlite/sqlite-audit-store.js';
import type { AuditAppender } from '../store/audit/audit-thread.js';
import { openDb, type Db } from '../store/sqlite/db.js';
import { SqliteKeysStore } from '../store/sqlite/sqlite-keys-store.js';
import { auditMigrations } from '../store/sqlite/migrations/audit.js';
import { registryMigrations } from '../store/sqlite/migrations/registry.js';
import { SqliteTenantAdmin } from '../store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../store/sqlite/sqlite-tenants-store.js';
import { SqliteTraceStore } from '../store/sqlite/sqlite-traces-store.js';
import { SqliteCertificatesStore } from '../store/sqlite/sqlite-certificates-store.js';
import type {
  ArtifactsStore,
  AuditStore,
  CertificatesStore,
  DescriptorsStore,
  FlowStateStore,
  KeysStore,
  SettingsStore,
  TenantAdmin,
  TenantsStore,
  TraceStore,
  UiSessionsStore,
  UiUsersStore,
  AuditEntryInput,
} from '../store/contracts/index.js';
import { SqliteDescriptorsStore } from '../store/sqlite/sqlite-descriptors-store.js';
import { SqliteFlowStateStore } from '../store/sqlite/sqlite-flow-state-store.js';
import type { PgStore } from '../store/pg/pg-store.js';
import { parseStoreUrl } from '../store/pg/store-url.js';
import { SqliteSettingsStore } from '../store/sqlite/sqlite-settings-store.js';
import { uiMigrations } from '../store/sqlite/migrations/ui.js';
import { SqliteUiSessionsStore } from '../store/sqlite/sqlite-ui-sessions-store.js';
import { SqliteUiUsersStore } from '../store/sqlite/sqlite-ui-users-store.js';
import type { StoreFlags } from './options.js';

/** The registry's stores, typed as their contracts: a command awaits every answer. */
export interface RegistryStores {
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly traces: TraceStore;
  readonly certificates: CertificatesStore;
  readonly settings: SettingsStore;
}

/** The registry's SQLite repositories (the audited tenant changes need the concrete tenants repository). */
interface RegistryRepos extends RegistryStores {
  readonly tenants: SqliteTenantsStore;
}

export interface AuditStores {
  readonly audit: AuditStore;
}

/** A command's PostgreSQL connections: a few, so that several commands and servers share the server's limit. */
const CLI_PG = { maxConnections: 4, applicationName: 'svc-cli' } as const;

/** Runs `fn` with the PostgreSQL store of `url` open (its schema migrated; a newer one is refused), closing it after. */
export async function withPgStore<T>(url: string, fn: (pg: PgStore) => Promise<T> | T): Promise<T> {
  // Loaded only here: a command on the state directory does not load the PostgreSQL client.
  const { openPgStore } = await import('../store/pg/pg-store.js');
  const pg = await openPgStore(url, CLI_PG);
  try {
    return await fn(pg);
  } finally {
    await pg.close();
  }
}

/**
 * Runs `fn` with the registry open: the PostgreSQL store, or the SQLite registry (created with its
 * state directory when missing; with `readOnly`, a missing file reads as an empty registry and is
 * not created).
 */
export async function withRegistry<T>(
  target: StoreFlags,
  fn: (stores: RegistryStores) => Promise<T> | T,
  opts: { readOnly?: boolean } = {},
): Promise<T> {
  if (target.store !== undefined) return withPgStore(target.store, (pg) => fn(pgRegistry(pg)));
  return withSqliteRegistry(target.db, fn, opts);
}

/** Like withRegistry, on the SQLite registry only, with its repositories as they are. */
function withSqliteRegistry<T>(dbPath: string, fn: (stores: RegistryRepos) => T, opts: { readOnly?: boolean } = {}): T {
  return withDb(statePaths(dbPath).registryDb, registryMigrations, opts.readOnly === true, (db) =>
    fn({
      tenants: new SqliteTenantsStore(db),
      keys: new SqliteKeysStore(db),
      artifacts: new SqliteArtifactsStore(db),
      traces: new SqliteTraceStore(db),
      certificates: new SqliteCertificatesStore(db),
      settings: new SqliteSettingsStore(db),
    }),
  );
}

/** Where the registry of a command is, for messages: the registry file, or the store URL without its password. */
export function registryLocation(target: StoreFlags): string {
  return target.store === undefined ? statePaths(target.db).registryDb : parseStoreUrl(target.store).redacted;
}

function pgRegistry(pg: PgStore): RegistryStores {
  return {
    tenants: pg.tenants,
    keys: pg.keys,
    artifacts: pg.artifacts,
    traces: pg.traces,
    certificates: pg.certificates,
    settings: pg.settings,
  };
}

/** Runs `fn` with the audit trail open (`audit.db` beside the registry, or the PostgreSQL store); with `readOnly` a missing `audit.db` gives undefined. */
export async function withAudit<T>(
  target: StoreFlags,
  fn: (stores: AuditStores | undefined) => Promise<T> | T,
  opts: { readOnly?: boolean } = {},
): Promise<T> {
  if (target.store !== undefined) return withPgStore(target.store, (pg) => fn({ audit: pg.audit }));
  return withAuditRepo(target.db, opts.readOnly === true, fn);
}

function withAuditRepo<T>(
  dbPath: string,
  readOnly: boolean,
  fn: (stores: { audit: SqliteAuditStore } | undefined) => T,
): T {
  const file = statePaths(dbPath).auditDb;
  if (readOnly && !existsSync(file)) return fn(undefined);
  return withDb(file, auditMigrations, false, (db) => fn({ audit: new SqliteAuditStore(db) }));
}

export interface UiStores {
  readonly users: UiUsersStore;
  readonly sessions: UiSessionsStore;
}

/** Runs `fn` with the UI accounts open (`ui.db` beside the registry, created when missing unless `readOnly`, or the PostgreSQL store). */
export async function withUi<T>(
  target: StoreFlags,
  fn: (stores: UiStores) => Promise<T> | T,
  opts: { readOnly?: boolean } = {},
): Promise<T> {
  if (target.store !== undefined)
    return withPgStore(target.store, (pg) => fn({ users: pg.uiUsers, sessions: pg.uiSessions }));
  return withDb(statePaths(target.db).uiDb, uiMigrations, opts.readOnly === true, (db) =>
    fn({ users: new SqliteUiUsersStore(db), sessions: new SqliteUiSessionsStore(db) }),
  );
}

/** The registry and the audit trail together, and the audited tenant changes spanning both. */
export interface RegistryAndAuditStores extends RegistryStores, AuditStores {
  readonly tenantAdmin: TenantAdmin;
}

/** Registry and audit trail together: the tenant commands change one and record in the other. */
export async function withRegistryAndAudit<T>(
  target: StoreFlags,
  fn: (stores: RegistryAndAuditStores) => Promise<T> | T,
): Promise<T> {
  if (target.store !== undefined)
    return withPgStore(target.store, (pg) => fn({ ...pgRegistry(pg), audit: pg.audit, tenantAdmin: pg.tenantAdmin }));
  return withSqliteRegistry(target.db, (registry) =>
    withAuditRepo(target.db, false, (audit) =>
      fn({ ...registry, audit: audit!.audit, tenantAdmin: new SqliteTenantAdmin(registry.tenants, audit!.audit) }),
    ),
  );
}

/** Runs `fn` against the flow state (deduplication and correlation rows); with `readOnly` a missing registry reads as empty. */
export async function withFlowState<T>(
  target: StoreFlags,
  fn: (store: FlowStateStore) => Promise<T>,
  opts: { readOnly?: boolean } = {},
): Promise<T> {
  if (target.store !== undefined) return withPgStore(target.store, (pg) => fn(pg.flowState));
  return withDb(statePaths(target.db).registryDb, registryMigrations, opts.readOnly === true, (db) =>
    fn(new SqliteFlowStateStore(db)),
  );
}

/** Runs `fn` with `svc dev`'s guard of the target: the state directory's marker file (nothing is opened), or the PostgreSQL store's marker row. */
export async function withDevStateMarker<T>(
  target: StoreFlags,
  fn: (marker: DevStateMarker) => Promise<T>,
): Promise<T> {
  if (target.store === undefined) return fn(stateDirMarker(statePaths(target.db)));
  const { PgDevState } = await import('../store/pg/pg-dev-state.js');
  return withPgStore(target.store, (pg) => fn(pgStoreMarker(new PgDevState(pg.db), pg.db.url.redacted)));
}

/**
 * Runs `fn` against the protobuf descriptors, or passes undefined when the SQLite registry does not
 * exist (a read or a refusal must not create it).
 */
export async function withDescriptors<T>(
  target: StoreFlags,
  fn: (store: DescriptorsStore | undefined) => Promise<T>,
): Promise<T> {
  if (target.store !== undefined) return withPgStore(target.store, (pg) => fn(pg.descriptors));
  const file = statePaths(target.db).registryDb;
  if (!existsSync(file)) return fn(undefined);
  const db = openDb(file, registryMigrations, { create: false });
  try {
    return await fn(new SqliteDescriptorsStore(db));
  } finally {
    db.close();
  }
}

/**
 * Runs `fn` with the queues (beside the registry, or the PostgreSQL store's) and an audit appender
 * for the entries a replay or discard writes; on PostgreSQL those entries are committed before the
 * store is closed.
 */
export async function withQueues<T>(
  target: StoreFlags,
  fn: (queues: DlqTarget, audit: AuditAppender) => Promise<T>,
): Promise<T> {
  if (target.store === undefined) {
    // audit.db is opened at the first entry: a listing must not create it.
    let audit: { db: Db; repo: SqliteAuditStore } | undefined;
    const appender: AuditAppender = {
      append: (entry) => {
        if (audit === undefined) {
          const db = openDb(statePaths(target.db).auditDb, auditMigrations);
          audit = { db, repo: new SqliteAuditStore(db) };
        }
        audit.repo.append(entry);
      },
    };
    try {
      return await fn({ db: target.db }, appender);
    } finally {
      audit?.db.close();
    }
  }
  return withPgStore(target.store, async (pg) => {
    const { PgQueueStore } = await import('../queue/pg/pg-queue-store.js');
    const queues = new PgQueueStore(pg.db);
    const appends: Promise<unknown>[] = [];
    const audit: AuditAppender = { append: (entry: AuditEntryInput) => void appends.push(pg.audit.append(entry)) };
    try {
      const result = await fn({ store: queues }, audit);
      await Promise.all(appends);
      return result;
    } finally {
      await Promise.allSettled(appends);
      await queues.close();
    }
  });
}

function withDb<T>(file: string, migrations: typeof registryMigrations, readOnly: boolean, fn: (db: Db) => T): T {
  // A read-only command must not leave a new, empty state directory behind a mistyped --db: it
  // reads an empty in-memory database instead.
  const db = readOnly && !existsSync(file) ? openDb(':memory:', migrations) : openDb(file, migrations);
  let result: T;
  try {
    result = fn(db);
  } catch (err) {
    db.close();
    throw err;
  }
  // An async `fn` still reads the database after returning: it stays open until the promise settles.
  if (result instanceof Promise) return result.finally(() => db.close()) as T;
  db.close();
  return result;
}

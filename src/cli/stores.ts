/**
 * Opens the stores an operator command needs from `--db`, and closes them whatever happens: when
 * `fn` returns a promise (a use case written against the storage contracts), once it settles.
 */
import { existsSync } from 'node:fs';
import { statePaths, type StatePaths } from '../common/paths.js';
import { ArtifactsRepo } from '../store/artifacts-repo.js';
import { AuditRepo } from '../store/audit-repo.js';
import { openDb, type Db } from '../store/db.js';
import { KeysRepo } from '../store/keys-repo.js';
import { auditMigrations } from '../store/migrations/audit.js';
import { registryMigrations } from '../store/migrations/registry.js';
import { TenantAdminRepo } from '../store/tenant-admin-repo.js';
import { TenantsRepo } from '../store/tenants-repo.js';
import { TraceRepo } from '../store/trace-repo.js';
import { CertificatesRepo } from '../store/certificates-repo.js';
import type { AuditStore, CertificatesStore, KeysStore, SettingsStore, TenantAdmin, TenantsStore, TraceStore, UiSessionsStore, UiUsersStore } from '../store/contracts.js';
import { SettingsRepo } from '../store/settings-repo.js';
import { uiMigrations } from '../store/migrations/ui.js';
import { UiSessionsRepo } from '../store/ui-sessions-repo.js';
import { UiUsersRepo } from '../store/ui-users-repo.js';

/** The registry's stores, typed as their contracts: a command awaits every answer. */
export interface RegistryStores {
  readonly paths: StatePaths;
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
  /** The SQLite repository itself: the flow loader (cert reconcile, config check) reads it synchronously. */
  readonly artifacts: ArtifactsRepo;
  readonly traces: TraceStore;
  readonly certificates: CertificatesStore;
  readonly settings: SettingsStore;
}

export interface AuditStores {
  readonly paths: StatePaths;
  readonly audit: AuditStore;
}

/**
 * Runs `fn` with the registry open (created with its state directory when missing), or, with
 * `readOnly`, passes undefined when the file does not exist rather than creating it.
 */
export function withRegistry<T>(dbPath: string, fn: (stores: RegistryStores) => T, opts: { readOnly?: boolean } = {}): T {
  return withRegistryRepos(dbPath, opts.readOnly === true, fn);
}

/** The registry's SQLite repositories (RegistryStores as their concrete classes). */
interface RegistryRepos extends RegistryStores {
  readonly tenants: TenantsRepo;
}

function withRegistryRepos<T>(dbPath: string, readOnly: boolean, fn: (stores: RegistryRepos) => T): T {
  const paths = statePaths(dbPath);
  return withDb(paths.registryDb, registryMigrations, readOnly, (db) =>
    fn({ paths, tenants: new TenantsRepo(db), keys: new KeysRepo(db), artifacts: new ArtifactsRepo(db), traces: new TraceRepo(db), certificates: new CertificatesRepo(db), settings: new SettingsRepo(db) }),
  );
}

/** Runs `fn` with `audit.db` beside the registry open; with `readOnly` a missing file gives undefined. */
export function withAudit<T>(dbPath: string, fn: (stores: AuditStores | undefined) => T, opts: { readOnly?: boolean } = {}): T {
  return withAuditRepo(dbPath, opts.readOnly === true, fn);
}

function withAuditRepo<T>(dbPath: string, readOnly: boolean, fn: (stores: { paths: StatePaths; audit: AuditRepo } | undefined) => T): T {
  const paths = statePaths(dbPath);
  if (readOnly && !existsSync(paths.auditDb)) return fn(undefined);
  return withDb(paths.auditDb, auditMigrations, false, (db) => fn({ paths, audit: new AuditRepo(db) }));
}

export interface UiStores {
  readonly paths: StatePaths;
  readonly users: UiUsersStore;
  readonly sessions: UiSessionsStore;
}

/** Runs `fn` with `ui.db` beside the registry open (created when missing, unless `readOnly`). */
export async function withUi<T>(dbPath: string, fn: (stores: UiStores) => Promise<T> | T, opts: { readOnly?: boolean } = {}): Promise<T> {
  const paths = statePaths(dbPath);
  const db = opts.readOnly === true && !existsSync(paths.uiDb) ? openDb(':memory:', uiMigrations) : openDb(paths.uiDb, uiMigrations);
  try {
    return await fn({ paths, users: new UiUsersRepo(db), sessions: new UiSessionsRepo(db) });
  } finally {
    db.close();
  }
}

/** Like withAudit, for async work: `audit.db` stays open until `fn` settles. */
export async function withAuditAsync<T>(dbPath: string, fn: (audit: AuditRepo) => Promise<T>): Promise<T> {
  const db = openDb(statePaths(dbPath).auditDb, auditMigrations);
  try {
    return await fn(new AuditRepo(db));
  } finally {
    db.close();
  }
}

/** The registry and the audit database together, and the audited tenant changes spanning both. */
export interface RegistryAndAuditStores extends RegistryStores, AuditStores {
  readonly tenantAdmin: TenantAdmin;
}

/** Registry and audit database together: the tenant commands change one and record in the other. */
export function withRegistryAndAudit<T>(dbPath: string, fn: (stores: RegistryAndAuditStores) => T): T {
  return withRegistryRepos(dbPath, false, (registry) =>
    withAuditRepo(dbPath, false, (audit) => fn({ ...registry, audit: audit!.audit, tenantAdmin: new TenantAdminRepo(registry.tenants, audit!.audit) })),
  );
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

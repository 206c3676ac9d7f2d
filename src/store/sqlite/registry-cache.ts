/**
 * The registry reads on the request path (key by hash, tenant, latest ref, trace flag, settings),
 * answered from memory while the database is unchanged. The file's change counter (see
 * change-counter.ts) tells whether another connection (an operator command, another server)
 * committed since the last look; it is read at most once per event-loop turn, so a change committed
 * before a turn begins is seen by every request of that turn. Writes through this process's own
 * connection must call `invalidate()`.
 */
import type { SettingName } from '../../common/settings.js';
import type { SqliteArtifactsStore } from './sqlite-artifacts-store.js';
import { changeCounterOf, type ChangeCounter } from './change-counter.js';
import type { Db } from './db.js';
import type { SqliteKeysStore } from './sqlite-keys-store.js';
import type { SqliteSettingsStore } from './sqlite-settings-store.js';
import type { SqliteTenantsStore } from './sqlite-tenants-store.js';
import type { SqliteTraceStore } from './sqlite-traces-store.js';
import type { RegistryReads, FlowVersionRef, ApiKeyRow, Tenant } from '../contracts/index.js';

/** Entries per map before it is cleared (bounds memory against callers spraying names). */
const MAX_ENTRIES = 10_000;

export interface RegistryRepos {
  keys: SqliteKeysStore;
  tenants: SqliteTenantsStore;
  artifacts: SqliteArtifactsStore;
  traces: SqliteTraceStore;
  settings: SqliteSettingsStore;
}

export class RegistryCache implements RegistryReads {
  readonly #repos: RegistryRepos;
  readonly #counter: ChangeCounter;
  #version: unknown;
  #checkedThisTurn = false;
  // Only keys that exist are cached: an unknown key always costs its indexed query.
  readonly #keys = new Map<string, ApiKeyRow>();
  readonly #tenants = new Map<string, Tenant | null>();
  readonly #latest = new Map<string, FlowVersionRef | null>();
  readonly #trace = new Map<string, boolean>();
  readonly #settings = new Map<SettingName, number>();

  constructor(db: Db, repos: RegistryRepos) {
    this.#repos = repos;
    this.#counter = changeCounterOf(db);
    this.#version = this.#counter.read();
  }

  findKeyByHash(hash: string): ApiKeyRow | undefined {
    this.#fresh();
    const hit = this.#keys.get(hash);
    if (hit !== undefined) return hit;
    const row = this.#repos.keys.findByHash(hash);
    if (row !== undefined) remember(this.#keys, hash, row);
    return row;
  }

  tenant(id: string): Tenant | undefined {
    this.#fresh();
    return this.#through(this.#tenants, id, () => this.#repos.tenants.get(id));
  }

  resolveLatest(tenant: string, name: string): FlowVersionRef | undefined {
    this.#fresh();
    return this.#through(this.#latest, `${tenant}/${name}`, () => this.#repos.artifacts.resolveLatest(tenant, name));
  }

  traceEnabled(tenant: string, flow: string): boolean {
    this.#fresh();
    const key = `${tenant}/${flow}`;
    let hit = this.#trace.get(key);
    if (hit === undefined) remember(this.#trace, key, (hit = this.#repos.traces.isEnabled(tenant, flow)));
    return hit;
  }

  setting(name: SettingName): number {
    this.#fresh();
    let hit = this.#settings.get(name);
    if (hit === undefined) this.#settings.set(name, (hit = this.#repos.settings.get(name)));
    return hit;
  }

  /** Releases the file handle of the change counter (the database itself is the caller's). */
  close(): void {
    this.#counter.close();
  }

  /** Forgetting is enough: the next read goes to the database. */
  refresh(): void {
    this.invalidate();
  }

  /** Forget everything (after a write through this process's own connection). */
  invalidate(): void {
    this.#keys.clear();
    this.#tenants.clear();
    this.#latest.clear();
    this.#trace.clear();
    this.#settings.clear();
  }

  #through<T>(map: Map<string, T | null>, key: string, load: () => T | undefined): T | undefined {
    const hit = map.get(key);
    if (hit !== undefined) return hit ?? undefined;
    const value = load();
    remember(map, key, value ?? null);
    return value;
  }

  #fresh(): void {
    if (this.#checkedThisTurn) return;
    this.#checkedThisTurn = true;
    setImmediate(() => (this.#checkedThisTurn = false));
    const version = this.#counter.read();
    if (version !== this.#version) {
      this.#version = version;
      this.invalidate();
    }
  }
}

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.size >= MAX_ENTRIES) map.clear();
  map.set(key, value);
}

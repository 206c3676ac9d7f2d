/**
 * API keys in the registry database. Only the SHA-256 of a key is stored; the gate finds a key by
 * that hash with one indexed read (keys carry 128 random bits, so a slow hash would add nothing).
 */
import type { Db } from './db.js';
import {
  type ApiKeyRow,
  type NewApiKey,
  type RevokeOutcome,
  type KeyRecord,
  KEY_COLUMNS,
  keyFromRecord,
  type KeysStore,
} from '../contracts/index.js';

export class SqliteKeysStore implements KeysStore {
  readonly #byHash;
  readonly #byId;
  readonly #byTenant;
  readonly #all;
  readonly #insert;
  readonly #revoke;
  readonly #any;

  constructor(db: Db) {
    this.#byHash = db.prepare<[string], KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ?`);
    this.#byId = db.prepare<[number], KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`);
    this.#byTenant = db.prepare<[string], KeyRecord>(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE tenant = ? ORDER BY id`,
    );
    this.#all = db.prepare<[], KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY tenant, id`);
    this.#insert = db.prepare(
      'INSERT INTO api_keys (tenant, label, key_hash, scopes, flows, expires_at, rate_limit, revoked_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)',
    );
    this.#revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');
    this.#any = db.prepare<[], { one: number }>('SELECT 1 AS one FROM api_keys LIMIT 1');
  }

  /** The gate's lookup: one read on the unique index of `key_hash`. */
  findByHash(keyHash: string): ApiKeyRow | undefined {
    const r = this.#byHash.get(keyHash);
    return r === undefined ? undefined : keyFromRecord(r);
  }

  get(id: number): ApiKeyRow | undefined {
    const r = this.#byId.get(id);
    return r === undefined ? undefined : keyFromRecord(r);
  }

  /** The tenant's keys, oldest first, revoked ones included. */
  list(tenant: string): ApiKeyRow[] {
    return this.#byTenant.all(tenant).map(keyFromRecord);
  }

  listAll(): ApiKeyRow[] {
    return this.#all.all().map(keyFromRecord);
  }

  create(key: NewApiKey): ApiKeyRow {
    const info = this.#insert.run(
      key.tenant,
      key.label,
      key.keyHash,
      JSON.stringify(key.scopes),
      JSON.stringify(key.flows),
      key.expiresAt,
      key.rateLimit,
      key.createdAt,
    );
    return this.get(Number(info.lastInsertRowid))!;
  }

  /** Marks the key revoked at `at` (ISO 8601 UTC); the row is kept. Atomic against concurrent revokes. */
  revoke(id: number, at: string): RevokeOutcome {
    if (this.#revoke.run(at, id).changes > 0) return 'revoked';
    return this.#byId.get(id) === undefined ? 'not_found' : 'already_revoked';
  }

  /** True when the table holds any key at all, in any status (the boot warning's test). */
  hasAnyKey(): boolean {
    return this.#any.get() !== undefined;
  }
}

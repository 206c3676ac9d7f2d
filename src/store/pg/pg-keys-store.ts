/** API keys in the PostgreSQL store: only the SHA-256 of a key is stored (see store/contracts/keys.ts). */
import type { PgTx } from './pg-db.js';
import {
  KEY_COLUMNS,
  keyFromRecord,
  type ApiKeyRow,
  type KeyRecord,
  type KeysStore,
  type NewApiKey,
  type RevokeOutcome,
} from '../contracts/index.js';

export class PgKeysStore implements KeysStore {
  constructor(private readonly db: PgTx) {}

  async findByHash(keyHash: string): Promise<ApiKeyRow | undefined> {
    return this.#one('WHERE key_hash = $1', [keyHash]);
  }

  async get(id: number): Promise<ApiKeyRow | undefined> {
    return this.#one('WHERE id = $1', [id]);
  }

  async list(tenant: string): Promise<ApiKeyRow[]> {
    return (
      await this.db.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE tenant = $1 ORDER BY id`, [tenant])
    ).rows.map(keyFromRecord);
  }

  async listAll(): Promise<ApiKeyRow[]> {
    // COLLATE "C": the byte order of SQLite's BINARY, so both stores list in one order.
    return (
      await this.db.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY tenant COLLATE "C", id`)
    ).rows.map(keyFromRecord);
  }

  async create(k: NewApiKey): Promise<ApiKeyRow> {
    const r = await this.db.query<KeyRecord>(
      `INSERT INTO api_keys (tenant, label, key_hash, scopes, flows, expires_at, rate_limit, revoked_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8) RETURNING ${KEY_COLUMNS}`,
      [
        k.tenant,
        k.label,
        k.keyHash,
        JSON.stringify(k.scopes),
        JSON.stringify(k.flows),
        k.expiresAt,
        k.rateLimit,
        k.createdAt,
      ],
    );
    return keyFromRecord(r.rows[0]!);
  }

  async revoke(id: number, at: string): Promise<RevokeOutcome> {
    // One statement: the conditional update decides, and the id's existence is read in the same snapshot.
    const r = await this.db.query<{ revoked: boolean; found: boolean }>(
      `WITH u AS (UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING id)
       SELECT EXISTS (SELECT 1 FROM u) AS revoked, EXISTS (SELECT 1 FROM api_keys WHERE id = $1) AS found`,
      [id, at],
    );
    const row = r.rows[0]!;
    return row.revoked ? 'revoked' : row.found ? 'already_revoked' : 'not_found';
  }

  async hasAnyKey(): Promise<boolean> {
    return ((await this.db.query('SELECT 1 FROM api_keys LIMIT 1')).rowCount ?? 0) > 0;
  }

  async #one(where: string, params: unknown[]): Promise<ApiKeyRow | undefined> {
    const r = await this.db.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys ${where}`, params);
    return r.rows[0] === undefined ? undefined : keyFromRecord(r.rows[0]);
  }
}

/** The API keys contract: a key row, its status, its record mapper, and how a raw key is made and hashed. */
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../common/digest.js';
import type { Awaitable } from '../../common/awaitable.js';

export type KeyStatus = 'active' | 'expired' | 'revoked';

export interface ApiKeyRow {
  readonly id: number;
  readonly tenant: string;
  readonly label: string;
  /** Hex SHA-256 of the raw key. */
  readonly keyHash: string;
  /** `*` matches every scope. */
  readonly scopes: readonly string[];
  /** Flow allowlist; empty means every flow of the tenant. */
  readonly flows: readonly string[];
  /** ISO 8601 UTC instant: the last second the key is valid; null never expires. */
  readonly expiresAt: string | null;
  /** Requests per second; null is unlimited. Burst capacity is twice this. */
  readonly rateLimit: number | null;
  readonly revokedAt: string | null;
  readonly createdAt: string;
}

/** What create() stores: a key row before it has an id, never revoked. */
export type NewApiKey = Omit<ApiKeyRow, 'id' | 'revokedAt'>;

/** What revoke() found. */
export type RevokeOutcome = 'revoked' | 'already_revoked' | 'not_found';

/** The raw key's prefix; it has no meaning to the server. */
export const KEY_PREFIX = 'svk_';

/** A fresh raw key: `svk_` and 32 hex characters (128 bits from the CSPRNG). */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(16).toString('hex');
}

/** Hex SHA-256 of a raw key, the only form in which a key is stored or looked up. */
export function hashKey(raw: string): string {
  return sha256Hex(raw);
}

/**
 * Derived status: `revoked` if revoked; else `expired` once the expiry second has passed; else
 * `active`. `expires_at` names the last valid second, so `2030-01-31T23:59:59Z` (what the bare day
 * `2030-01-31` means) is valid through the whole of that second, i.e. the whole day.
 */
export function keyStatus(row: Pick<ApiKeyRow, 'revokedAt' | 'expiresAt'>, now: Date = new Date()): KeyStatus {
  if (row.revokedAt !== null) return 'revoked';
  if (row.expiresAt !== null) {
    const expiry = Date.parse(row.expiresAt);
    // An unreadable expiry fails closed.
    if (Number.isNaN(expiry) || now.getTime() >= expiry + 1000) return 'expired';
  }
  return 'active';
}

/** A row of `api_keys` as either database returns it. */
export interface KeyRecord {
  id: number;
  tenant: string;
  label: string;
  key_hash: string;
  scopes: string;
  flows: string;
  expires_at: string | null;
  rate_limit: number | null;
  revoked_at: string | null;
  created_at: string;
}

export const KEY_COLUMNS = 'id, tenant, label, key_hash, scopes, flows, expires_at, rate_limit, revoked_at, created_at';

export function keyFromRecord(r: KeyRecord): ApiKeyRow {
  return Object.freeze({
    id: r.id,
    tenant: r.tenant,
    label: r.label,
    keyHash: r.key_hash,
    scopes: Object.freeze(JSON.parse(r.scopes) as string[]),
    flows: Object.freeze(JSON.parse(r.flows) as string[]),
    expiresAt: r.expires_at,
    rateLimit: r.rate_limit,
    revokedAt: r.revoked_at,
    createdAt: r.created_at,
  });
}

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface KeysStore {
  /** The gate's lookup by the hex SHA-256 of the raw key. */
  findByHash(keyHash: string): Awaitable<ApiKeyRow | undefined>;
  get(id: number): Awaitable<ApiKeyRow | undefined>;
  /** The tenant's keys, oldest first, revoked ones included. */
  list(tenant: string): Awaitable<ApiKeyRow[]>;
  /** Every tenant's keys in one read: by tenant id (byte order), then oldest first (the UI's Keys page). */
  listAll(): Awaitable<ApiKeyRow[]>;
  create(key: NewApiKey): Awaitable<ApiKeyRow>;
  /** Atomic against concurrent revokes: exactly one caller gets 'revoked'. */
  revoke(id: number, at: string): Awaitable<RevokeOutcome>;
  hasAnyKey(): Awaitable<boolean>;
}

/**
 * API key use cases: create (the raw key is returned once and only its hash is stored), list with
 * derived status, revoke; plus the parsers for the flags that shape a key.
 */
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';
import {
  type KeysStore,
  type TenantsStore,
  generateKey,
  hashKey,
  keyStatus,
  type ApiKeyRow,
  type KeyStatus,
  type Tenant,
} from '../../store/contracts/index.js';
import { assertName, listTenants, requireActiveTenant, requireTenant } from './tenants.js';

export interface KeyDeps {
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/;
const OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}(:?\d{2})?)$/;
const ACCEPTED = 'use a day YYYY-MM-DD (valid through 23:59:59 UTC) or a UTC instant YYYY-MM-DDTHH:MM:SSZ';

/**
 * Reads `--expires-at` into the stored form (ISO 8601 UTC, seconds). A bare day `YYYY-MM-DD`
 * means `YYYY-MM-DDT23:59:59Z`; an instant must be `YYYY-MM-DDTHH:MM:SSZ`. A timezone offset is
 * refused (say the instant in UTC), and so is anything that is not a real calendar date and time.
 */
export function parseExpiresAt(text: string): string {
  const value = text.trim();
  if (OFFSET.test(value)) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `--expires-at "${text}" has a timezone offset; offsets are refused: give the instant in UTC with a Z suffix (YYYY-MM-DDTHH:MM:SSZ)`,
    );
  }
  const day = DAY.exec(value);
  const instant = day === null ? INSTANT.exec(value) : null;
  const parts = day ?? instant;
  if (parts === null)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `--expires-at "${text}" is not a date or instant: ${ACCEPTED}`);
  const [y, mo, d] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const [h, mi, s] = day !== null ? [23, 59, 59] : [Number(parts[4]), Number(parts[5]), Number(parts[6])];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Date.UTC rolls 2030-02-30 over to March 2; a real date survives the round trip unchanged.
  const real =
    y >= 1 &&
    at.getUTCFullYear() === y &&
    at.getUTCMonth() === mo - 1 &&
    at.getUTCDate() === d &&
    at.getUTCHours() === h &&
    at.getUTCMinutes() === mi &&
    at.getUTCSeconds() === s;
  if (!real)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `--expires-at "${text}" is not a valid calendar date and time: ${ACCEPTED}`,
    );
  return isoNow(at);
}

/** Reads `--rate-limit`: a positive, finite number of requests per second. */
export function parseRateLimit(text: string): number {
  const value = text.trim();
  const rps = /^(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isFinite(rps) || rps <= 0) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `--rate-limit must be a positive number of requests per second, got "${text}"`,
    );
  }
  return rps;
}

/** Burst capacity of a key's token bucket: twice its rate. */
export function rateLimitBurst(rps: number): number {
  return 2 * rps;
}

/** Splits a comma-separated flag value: entries trimmed, empty entries dropped, duplicates collapsed, order kept. */
export function parseList(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
}

/** Reads `--scopes`; at least one scope. @default ['*'] */
export function parseScopes(text: string | undefined): string[] {
  if (text === undefined) return ['*'];
  const scopes = parseList(text);
  if (scopes.length === 0)
    throw new SvcError('SVC_ERR_INVALID_INPUT', '--scopes names no scope; leave it out for every scope (*)');
  return scopes;
}

/** Reads `--flows`: flow names under the name rule. Empty (or absent) allows every flow of the tenant. */
export function parseFlows(text: string | undefined): string[] {
  if (text === undefined) return [];
  const flows = parseList(text);
  for (const flow of flows) {
    const problem = describeNameProblem('flow', flow);
    if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', `--flows: ${problem}`);
  }
  return flows;
}

export interface NewKeyInput {
  readonly tenant: string;
  readonly label: string;
  /** @default ['*'] */
  readonly scopes?: readonly string[];
  /** @default [] (every flow) */
  readonly flows?: readonly string[];
  /** A day `YYYY-MM-DD` or UTC instant, read by parseExpiresAt; absent never expires. */
  readonly expiresAt?: string;
  /** Requests per second; absent is unlimited. */
  readonly rateLimit?: number;
}

export interface CreatedKey {
  readonly row: ApiKeyRow;
  /** Shown once; only its hash was stored. */
  readonly rawKey: string;
}

/** Creates a key for a registered, enabled tenant. @throws TenantNotActiveError naming the repair */
export async function createApiKey(deps: KeyDeps, input: NewKeyInput, now: Date = new Date()): Promise<CreatedKey> {
  assertName('tenant', input.tenant);
  const label = input.label.trim();
  if (label === '') throw new SvcError('SVC_ERR_INVALID_INPUT', 'the label must not be empty');
  const scopes = input.scopes ?? ['*'];
  if (scopes.length === 0 || scopes.some((s) => s.trim() === '' || s.includes(','))) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', 'scopes must be non-empty strings without commas');
  }
  const flows = input.flows ?? [];
  for (const flow of flows) assertName('flow', flow);
  if (input.rateLimit !== undefined && !(Number.isFinite(input.rateLimit) && input.rateLimit > 0)) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', 'the rate limit must be a positive number of requests per second');
  }
  const expiresAt = input.expiresAt === undefined ? null : parseExpiresAt(input.expiresAt);
  await requireActiveTenant(deps.tenants, input.tenant);
  const rawKey = generateKey();
  const row = await deps.keys.create({
    tenant: input.tenant,
    label,
    keyHash: hashKey(rawKey),
    scopes,
    flows,
    expiresAt,
    rateLimit: input.rateLimit ?? null,
    createdAt: isoNow(now),
  });
  return { row, rawKey };
}

export interface KeyView {
  readonly row: ApiKeyRow;
  readonly status: KeyStatus;
}

/** The tenant's keys with derived status (never the key). Refuses an unregistered tenant. */
export async function listApiKeys(deps: KeyDeps, tenant: string, now: Date = new Date()): Promise<KeyView[]> {
  assertName('tenant', tenant);
  await requireTenant(deps.tenants, tenant);
  return (await deps.keys.list(tenant)).map((row) => ({ row, status: keyStatus(row, now) }));
}

/** Revokes at once and for good; the row stays. A missing or already revoked key is an error. */
export async function revokeApiKey(keys: KeysStore, id: number, now: Date = new Date()): Promise<ApiKeyRow> {
  const outcome = await keys.revoke(id, isoNow(now));
  if (outcome === 'not_found') throw new SvcError('SVC_ERR_NOT_FOUND', `API key ${id} does not exist`);
  const row = (await keys.get(id))!;
  if (outcome === 'already_revoked')
    throw new SvcError('SVC_ERR_CONFLICT', `API key ${id} is already revoked (since ${row.revokedAt})`);
  return row;
}

/** Every tenant and every key of each, as the UI's Keys page lists them. */
export interface KeysOverview {
  readonly tenants: readonly Tenant[];
  /** Tenant by tenant (in `tenants` order), each tenant's keys oldest first, with derived status. */
  readonly keys: readonly KeyView[];
}

/**
 * Every tenant's keys in one call. The tenants come from the registry, so none needs checking again
 * (`listApiKeys` checks the one it is given).
 */
export async function listAllApiKeys(deps: KeyDeps, now: Date = new Date()): Promise<KeysOverview> {
  const tenants = await listTenants(deps.tenants);
  // One read for every tenant's keys, not one per tenant.
  const keys: KeyView[] = (await deps.keys.listAll()).map((row) => ({ row, status: keyStatus(row, now) }));
  return { tenants, keys };
}

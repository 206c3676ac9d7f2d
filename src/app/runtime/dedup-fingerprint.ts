/**
 * Business keys (dedup and correlation) are stored only as fingerprints: HMAC-SHA256 keyed with
 * SVC_SECRET_SVC_STATE_KEY when set, else plain SHA-256 of the same `tenant / flow / key` text.
 */
import { createHmac } from 'node:crypto';
import { sha256Hex } from '../../common/digest.js';

/** Environment variable holding the state key (the HMAC key of every fingerprint). */
export const STATE_KEY_ENV = 'SVC_SECRET_SVC_STATE_KEY';

/** The state key from the environment; undefined when unset or empty. */
export function stateKeyFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const v = env[STATE_KEY_ENV];
  return v === undefined || v === '' ? undefined : v;
}

/** Hex fingerprint of a business key of (tenant, flow); the key itself is never stored. */
export function keyFingerprint(tenant: string, flow: string, key: string, stateKey: string | undefined): string {
  // NUL separators: no (tenant, flow, key) triple can be confused with another.
  const text = `${tenant}\u0000${flow}\u0000${key}`;
  return stateKey === undefined ? sha256Hex(text) : createHmac('sha256', stateKey).update(text).digest('hex');
}

/** The textual form of an evaluated key expression; undefined when it is empty (null, '', [] or {}). */
export function keyText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  const json = JSON.stringify(value);
  return json === '[]' || json === '{}' ? undefined : json;
}

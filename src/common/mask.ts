/** Masking of secrets in logged payloads: a global list of 25 field names plus a flow's extra names. */

/** Value written in place of a masked field. */
export const MASK = '***';

/**
 * The global list (exactly 25). Names are compared case-insensitively with `-` read as `_`, so
 * `Set-Cookie`, `set_cookie` and `SET-COOKIE` are one name. Documented in docs/events.md.
 */
export const GLOBAL_MASK_FIELDS: readonly string[] = Object.freeze([
  'password',
  'passwd',
  'pwd',
  'secret',
  'client_secret',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'bearer_token',
  'api_key',
  'apikey',
  'x_api_key',
  'authorization',
  'proxy_authorization',
  'www_authenticate',
  'cookie',
  'set_cookie',
  'private_key',
  'session_id',
  'ssn',
  'credit_card',
  'card_number',
  'cvv',
  'pin',
]);

/** Header names whose values are never recorded: they are removed from logged header maps. */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'set-cookie',
  'cookie',
  'www-authenticate',
  'proxy-authorization',
]);

/** The comparison form of a field name. */
export function normaliseFieldName(name: string): string {
  return name.toLowerCase().replace(/-/g, '_');
}

const GLOBAL_SET: ReadonlySet<string> = new Set(GLOBAL_MASK_FIELDS.map(normaliseFieldName));

/** A matcher for one flow: the global list plus its `log_extra_mask_fields`. Build once per flow. */
export class MaskSet {
  readonly #extra: ReadonlySet<string>;
  constructor(extra: readonly string[] = []) {
    this.#extra = new Set(extra.map(normaliseFieldName));
  }
  has(field: string): boolean {
    const n = normaliseFieldName(field);
    return GLOBAL_SET.has(n) || this.#extra.has(n);
  }
}

export const GLOBAL_MASK = new MaskSet();

/**
 * A copy of `value` in which every object field named in `mask` (at any depth, inside arrays too)
 * holds `"***"`. Non-plain objects (XmlValue, Buffer, Date ...) are returned as they are; cycles
 * are cut. The input is never modified.
 */
export function maskPayload(value: unknown, mask: MaskSet = GLOBAL_MASK): unknown {
  return maskInner(value, mask, new WeakSet());
}

function maskInner(value: unknown, mask: MaskSet, seen: WeakSet<object>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[circular]';
  if (Array.isArray(value)) {
    seen.add(value);
    const out = value.map((v) => maskInner(v, mask, seen));
    seen.delete(value);
    return out;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  seen.add(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = mask.has(k) ? MASK : maskInner(v, mask, seen);
  }
  seen.delete(value);
  return out;
}

/** A copy of a header map without the credential headers (names compared case-insensitively). */
export function stripCredentialHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADERS.has(k.toLowerCase())) out[k] = v;
  }
  return out;
}

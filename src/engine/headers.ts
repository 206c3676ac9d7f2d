/** Builds `ctx.headers` from a request's raw headers: what a flow may read, and nothing else. */

/** Hop-by-hop headers (RFC 9110 7.6.1 plus the legacy ones) never enter the flow context. */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

/** Credentials never enter the flow context (spec: Authentication, /run request headers). */
const NEVER_IN_CTX: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key']);

/** Raw headers as Node gives them: a map (values may be arrays) or the flat `rawHeaders` list. */
export type RawHeaders = Record<string, string | string[] | undefined> | readonly string[];

/**
 * Lowercase names; repeated headers joined with `, `; hop-by-hop headers (and any header named in
 * `Connection`) stripped; `authorization`, `proxy-authorization`, `cookie`, `x-api-key` removed.
 */
export function buildHeaders(raw: RawHeaders): Record<string, string> {
  const pairs: string[] = [];
  if (Array.isArray(raw)) {
    pairs.push(...(raw as readonly string[]));
  } else {
    for (const [name, value] of Object.entries(raw as Record<string, string | string[] | undefined>)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) pairs.push(name, v);
      else pairs.push(name, value);
    }
  }
  // Names listed in `Connection` are hop-by-hop for this request too.
  let named: Set<string> | undefined;
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    if (pairs[i]!.toLowerCase() !== 'connection') continue;
    named ??= new Set();
    for (const token of pairs[i + 1]!.split(',')) {
      const n = token.trim().toLowerCase();
      if (n) named.add(n);
    }
  }
  // Filtered while adding, never deleted afterwards: `delete` turns the object into a slow
  // dictionary for every later read of ctx.headers.
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const n = pairs[i]!.toLowerCase();
    if (HOP_BY_HOP.has(n) || NEVER_IN_CTX.has(n) || named?.has(n)) continue;
    const value = pairs[i + 1]!;
    out[n] = Object.hasOwn(out, n) ? `${out[n]}, ${value}` : value;
  }
  return out;
}

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
  let list: readonly string[];
  if (Array.isArray(raw)) {
    list = raw as readonly string[];
  } else {
    const pairs: string[] = [];
    for (const [name, value] of Object.entries(raw as Record<string, string | string[] | undefined>)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) pairs.push(name, v);
      else pairs.push(name, value);
    }
    list = pairs;
  }
  const out = collect(list, undefined);
  const connection = out.connection;
  if (connection === undefined) return out;
  // Names listed in `Connection` are hop-by-hop for this request too (rare: a second pass, since
  // deleting keys would turn the map into a slow dictionary for every later read).
  const named = new Set<string>();
  for (const token of connection.split(',')) {
    const n = token.trim().toLowerCase();
    if (n) named.add(n);
  }
  return collect(list, named);
}

/** Lowercase names, repeats joined with `, `; hop-by-hop, credential and `named` headers left out. */
function collect(list: readonly string[], named: ReadonlySet<string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) {
    const n = list[i]!.toLowerCase();
    // `connection` is kept on the first pass only, to read its tokens; never in the result.
    if ((HOP_BY_HOP.has(n) && (named !== undefined || n !== 'connection')) || NEVER_IN_CTX.has(n) || named?.has(n))
      continue;
    const value = list[i + 1]!;
    out[n] = Object.hasOwn(out, n) ? `${out[n]}, ${value}` : value;
  }
  return out;
}

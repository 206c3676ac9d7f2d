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
  const out: Record<string, string> = {};
  const add = (name: string, value: string): void => {
    const n = name.toLowerCase();
    out[n] = Object.hasOwn(out, n) ? `${out[n]}, ${value}` : value;
  };
  if (Array.isArray(raw)) {
    const list = raw as readonly string[];
    for (let i = 0; i + 1 < list.length; i += 2) add(list[i]!, list[i + 1]!);
  } else {
    for (const [name, value] of Object.entries(raw as Record<string, string | string[] | undefined>)) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) add(name, v);
      else add(name, value);
    }
  }
  const connection = out.connection;
  if (connection !== undefined) {
    for (const token of connection.split(',')) {
      const n = token.trim().toLowerCase();
      if (n) delete out[n];
    }
  }
  for (const n of HOP_BY_HOP) delete out[n];
  for (const n of NEVER_IN_CTX) delete out[n];
  return out;
}

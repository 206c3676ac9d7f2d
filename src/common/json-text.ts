/** JSON text of a string, byte for byte what JSON.stringify writes, without the call where it can. */

/** Characters JSON.stringify escapes: quote, backslash, control characters, and (lone) surrogates. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(text)`. Names, timestamps, hex digests and UUIDs need no escaping, and for them
 * quoting by hand is cheaper than the call (hot paths: event log lines, audit hashes).
 */
export function jsonString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

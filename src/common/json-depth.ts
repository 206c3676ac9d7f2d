/**
 * The nesting limit of JSON the service accepts (bodies of /run, /enqueue, connector events): deep
 * enough for any real document, shallow enough that every walk of a value (masking, templates, the
 * writers) stays far from the stack's end. XML has its own, 64 (xml-scan.ts).
 */
export const JSON_MAX_DEPTH = 128;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when the JSON text nests arrays and objects deeper than `max`. One pass over the bytes,
 * skipping string contents; a body shorter than `max` bytes cannot, and is not scanned at all.
 */
export function jsonNestsDeeperThan(bytes: Uint8Array, max: number = JSON_MAX_DEPTH): boolean {
  if (bytes.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

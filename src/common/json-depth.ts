/**
 * The nesting limit of JSON values: of the bodies the service accepts (/run, /enqueue, connector
 * events, gRPC requests, a backend's JSON answer) and of every value a flow step makes. Deep enough
 * for any real document, shallow enough that every walk of a value (the expression evaluator,
 * protobufjs, JSON.stringify) stays far from the stack's end. XML has its own, 64 (xml-scan.ts).
 * Where each check sits: docs/operations.md, "Limits a hostile client meets".
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

/**
 * A value nests deeper than the limit. Raised by the walks that refuse such a value (masking, the
 * flow engine's checks); each caller turns it into its own answer (a flow failure, a log marker).
 */
export class NestingTooDeepError extends Error {
  /** @param what the value, as the message should name it ("the payload", "its output") */
  constructor(
    what: string,
    readonly limit: number = JSON_MAX_DEPTH,
  ) {
    super(`${what} nests deeper than ${limit} levels`);
    this.name = 'NestingTooDeepError';
  }
}

/** Arrays and plain objects: the values whose JSON form nests (others are written flat, or by their toJSON). */
export function isNestingContainer(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * True when `value` nests arrays and plain objects deeper than `max`, counted as
 * jsonNestsDeeperThan counts brackets: a scalar is 0 levels, `[]` one, `{"a":[]}` two. Other
 * objects (XmlValue, Date, Buffer) count as scalars. An explicit stack rather than recursion, so a
 * value of any depth is measured without running out of stack; it stops at the first level past
 * `max` (a cyclic value therefore counts as too deep).
 */
export function valueNestsDeeperThan(value: unknown, max: number = JSON_MAX_DEPTH): boolean {
  if (!isNestingContainer(value)) return false;
  if (max < 1) return true;
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const node = pending.pop() as Record<string, unknown> | unknown[];
    const depth = depths.pop()!;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item = node[i];
        if (typeof item !== 'object' || item === null || !isNestingContainer(item)) continue;
        if (depth >= max) return true;
        pending.push(item);
        depths.push(depth + 1);
      }
    } else {
      for (const key in node) {
        const item = node[key];
        if (typeof item !== 'object' || item === null || !isNestingContainer(item)) continue;
        if (depth >= max) return true;
        pending.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

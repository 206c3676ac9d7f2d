/** Plain JSON-friendly values from what the CEL evaluator returns, at any depth without running out of stack. */
import { XmlValue } from '../common/xml-value.js';

/**
 * Converts a CEL result to a plain JSON-friendly value: BigInt -> number (decimal string when
 * beyond 2^53), Date -> ISO string, bytes -> base64. Returns the same reference when nothing
 * needed converting, so passing `ctx.input` through costs a walk but no copy.
 */
export function toPlain(v: unknown): unknown {
  return plainAt(v, 0);
}

/**
 * Levels converted by recursion before the walk moves its path onto the heap (plainTree): far from
 * the stack's end, and deeper than nearly any real value, which so keeps the recursive walk's
 * speed (the heap walk costs two to three times as much per container).
 */
const RECURSIVE_LEVELS = 64;

/** toPlain of `v`, found `depth` containers down. */
function plainAt(v: unknown, depth: number): unknown {
  const leaf = plainLeaf(v);
  if (leaf !== DESCEND) return leaf;
  if (depth === RECURSIVE_LEVELS) return plainTree(v as object);
  // A Map's or Set's fresh object or array is its own copy.
  const source =
    v instanceof Map
      ? (Object.fromEntries(v) as Record<string, unknown>)
      : v instanceof Set
        ? [...(v as Set<unknown>)]
        : v;
  if (Array.isArray(source)) {
    let copy: unknown[] | undefined = source !== v ? source : undefined;
    for (let i = 0; i < source.length; i++) {
      const item: unknown = source[i];
      const plain = plainAt(item, depth + 1);
      if (plain === item) continue;
      copy ??= source.slice();
      copy[i] = plain;
    }
    return copy ?? source;
  }
  const obj = source as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined = source !== v ? obj : undefined;
  for (const k of Object.keys(obj)) {
    const item = obj[k];
    const plain = plainAt(item, depth + 1);
    if (plain === item) continue;
    copy ??= { ...obj };
    copy[k] = plain;
  }
  return copy ?? obj;
}

/** plainLeaf's answer for a container whose fields must be visited. */
const DESCEND: unique symbol = Symbol('descend');

/** The plain form of a value without fields to visit; DESCEND for an array, a plain object, a Map or a Set. */
function plainLeaf(v: unknown): unknown {
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined':
      return v;
    case 'bigint':
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
    case 'object':
      break;
    default:
      return String(v);
  }
  if (v === null || v instanceof XmlValue) return v;
  if (Array.isArray(v) || v instanceof Map || v instanceof Set) return DESCEND;
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto !== Object.prototype && proto !== null ? String(v) : DESCEND;
}

/** A container being converted: what is read, the copy once a field changed, and the next field. */
interface PlainFrame {
  /** The value as found (an array, a plain object, a Map or a Set). */
  readonly found: object;
  /** What the fields are read from: `found`, or a fresh object / array made from a Map / Set. */
  readonly source: Record<string, unknown> | unknown[];
  /** The object's own keys; undefined for an array. */
  readonly keys: string[] | undefined;
  readonly length: number;
  next: number;
  /** Made at the first field that changes (a Map's or Set's fresh source is its own copy). */
  copy: Record<string, unknown> | unknown[] | undefined;
}

function plainFrame(found: object): PlainFrame {
  let source: Record<string, unknown> | unknown[];
  let copy: Record<string, unknown> | unknown[] | undefined;
  if (found instanceof Map) source = copy = Object.fromEntries(found) as Record<string, unknown>;
  else if (found instanceof Set) source = copy = [...(found as Set<unknown>)];
  else source = found as Record<string, unknown> | unknown[];
  if (Array.isArray(source)) return { found, source, keys: undefined, length: source.length, next: 0, copy };
  const keys = Object.keys(source);
  return { found, source, keys, length: keys.length, next: 0, copy };
}

/**
 * toPlain of a container found RECURSIVE_LEVELS down, depth first with the path on an explicit
 * stack (a value of any depth converts without running out of call stack). A field whose plain form differs from it makes
 * its container a copy, and that copy changes the container's parent in turn. A container met
 * again on its own path (a cycle) is left as it is.
 */
function plainTree(root: object): unknown {
  const path: PlainFrame[] = [plainFrame(root)];
  const onPath = new Set<object>([root]);
  let finished: unknown = DESCEND; // the plain form of the container just completed, for its parent
  for (;;) {
    const frame = path[path.length - 1]!;
    if (frame.next === frame.length) {
      path.pop();
      onPath.delete(frame.found);
      const plain = frame.copy ?? frame.source;
      if (path.length === 0) return plain;
      finished = plain;
      continue;
    }
    const key = frame.keys === undefined ? frame.next : frame.keys[frame.next]!;
    const item = (frame.source as Record<string | number, unknown>)[key];
    let plain: unknown;
    if (finished !== DESCEND) {
      plain = finished;
      finished = DESCEND;
    } else {
      plain = plainLeaf(item);
      if (plain === DESCEND) {
        if (!onPath.has(item as object)) {
          path.push(plainFrame(item as object));
          onPath.add(item as object);
          continue;
        }
        plain = item;
      }
    }
    frame.next++;
    if (plain !== item && frame.copy === undefined)
      frame.copy = Array.isArray(frame.source) ? frame.source.slice() : { ...frame.source };
    if (frame.copy !== undefined) (frame.copy as Record<string | number, unknown>)[key] = plain;
  }
}

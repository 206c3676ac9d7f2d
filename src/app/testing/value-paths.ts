/**
 * JSON values read and compared by path, for an example's expectations: `$.order.items[0].sku`
 * (the `$` optional, `['x-y']` for names that are not identifiers), and the differences between an
 * expected and an actual value as a list of paths, so a failure says where, not only that.
 */

export interface Difference {
  /** Where, as a path from the compared value (`$` for the whole). */
  readonly path: string;
  readonly expected: unknown;
  /** MISSING when the actual value has nothing there. */
  readonly actual: unknown;
}

/** Marks a path the actual value does not have (printed as "nothing"). */
export const MISSING: unique symbol = Symbol('missing');

const SEGMENT = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\])/;

/** The segments of a path; undefined when it does not read. */
export function parsePath(path: string): (string | number)[] | undefined {
  let rest = path.trim();
  if (rest.startsWith('$')) rest = rest.slice(1);
  else if (rest !== '' && !rest.startsWith('.') && !rest.startsWith('[')) rest = `.${rest}`;
  const out: (string | number)[] = [];
  while (rest !== '') {
    const m = SEGMENT.exec(rest);
    if (m === null) return undefined;
    out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (m[3] ?? m[4]!).replace(/\\(.)/g, '$1')));
    rest = rest.slice(m[0].length);
  }
  return out;
}

/** The value at `segments` of `value`, or MISSING. */
export function valueAt(value: unknown, segments: readonly (string | number)[]): unknown {
  let v: unknown = value;
  for (const s of segments) {
    if (typeof s === 'number' ? !Array.isArray(v) || s >= v.length : !isRecord(v) || !Object.hasOwn(v, s))
      return MISSING;
    v = (v as Record<string | number, unknown>)[s];
  }
  return v;
}

/** `$` followed by each segment. */
export function pathText(segments: readonly (string | number)[]): string {
  return `$${segments.map((s) => (typeof s === 'number' ? `[${s}]` : /^[A-Za-z_$][\w$-]*$/.test(s) ? `.${s}` : `['${s.replace(/'/g, "\\'")}']`)).join('')}`;
}

/** Every place `actual` differs from `expected` (a map's extra keys and a list's extra items included). */
export function differences(expected: unknown, actual: unknown, at: (string | number)[] = []): Difference[] {
  if (sameScalar(expected, actual)) return [];
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const out: Difference[] = [];
    const n = Math.max(expected.length, actual.length);
    for (let i = 0; i < n; i++) {
      if (i >= actual.length) out.push({ path: pathText([...at, i]), expected: expected[i], actual: MISSING });
      else if (i >= expected.length) out.push({ path: pathText([...at, i]), expected: MISSING, actual: actual[i] });
      else out.push(...differences(expected[i], actual[i], [...at, i]));
    }
    return out;
  }
  if (isRecord(expected) && isRecord(actual)) {
    const out: Difference[] = [];
    for (const k of Object.keys(expected)) {
      if (!Object.hasOwn(actual, k)) out.push({ path: pathText([...at, k]), expected: expected[k], actual: MISSING });
      else out.push(...differences(expected[k], actual[k], [...at, k]));
    }
    for (const k of Object.keys(actual))
      if (!Object.hasOwn(expected, k)) out.push({ path: pathText([...at, k]), expected: MISSING, actual: actual[k] });
    return out;
  }
  return [{ path: pathText(at), expected, actual }];
}

function sameScalar(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value as a failure line prints it: JSON, at most 200 characters; MISSING as "nothing". */
export function shown(v: unknown): string {
  if (v === MISSING) return 'nothing';
  const text = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

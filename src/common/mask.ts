/** Masking of secrets in logged payloads: a global list of 25 field names plus a flow's extra names. */
import { isNestingContainer, JSON_MAX_DEPTH, NestingTooDeepError } from './json-depth.js';
import { XmlValue } from './xml-value.js';

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

/** Options of maskPayload. */
export interface MaskOptions {
  /** What an XML value becomes in the copy. @default the XML value itself */
  readonly xml?: (value: XmlValue) => unknown;
}

/** One array or plain object being copied: the source, its copy, and the next field to visit. */
interface MaskFrame {
  readonly source: Record<string, unknown> | unknown[];
  readonly copy: Record<string, unknown> | unknown[];
  /** The object's own keys; undefined for an array. */
  readonly keys: string[] | undefined;
  readonly length: number;
  next: number;
}

function maskFrame(source: object, copy: Record<string, unknown> | unknown[]): MaskFrame {
  if (Array.isArray(source)) return { source, copy, keys: undefined, length: source.length, next: 0 };
  const keys = Object.keys(source);
  return { source: source as Record<string, unknown>, copy, keys, length: keys.length, next: 0 };
}

/**
 * A copy of `value` in which every object field named in `mask` (at any depth, inside arrays too)
 * holds `"***"`. Other objects than arrays and plain ones (Buffer, Date ...) are kept as they are,
 * an XmlValue too unless `opts.xml` replaces it; a cycle is cut (`"[circular]"`). The input is
 * never modified. The walk keeps its path on an explicit stack, not the call stack, and refuses a
 * value nesting deeper than JSON_MAX_DEPTH: its copy could not be written as JSON anyway.
 * @throws NestingTooDeepError for a value nesting deeper than JSON_MAX_DEPTH
 */
export function maskPayload(value: unknown, mask: MaskSet = GLOBAL_MASK, opts: MaskOptions = {}): unknown {
  const replaceXml = opts.xml;
  if (value === null || typeof value !== 'object') return value;
  if (replaceXml !== undefined && value instanceof XmlValue) return replaceXml(value);
  if (!isNestingContainer(value)) return value;
  const root: Record<string, unknown> | unknown[] = Array.isArray(value) ? new Array<unknown>(value.length) : {};
  // The frames of the containers from the root down to the one being copied: the path.
  const path: MaskFrame[] = [maskFrame(value, root)];
  while (path.length > 0) {
    const frame = path[path.length - 1]!;
    if (frame.next === frame.length) {
      path.pop();
      continue;
    }
    const i = frame.next++;
    let key: string | number = i;
    if (frame.keys !== undefined) {
      key = frame.keys[i]!;
      if (mask.has(key)) {
        (frame.copy as Record<string, unknown>)[key] = MASK;
        continue;
      }
    }
    const item = (frame.source as Record<string | number, unknown>)[key];
    const out = frame.copy as Record<string | number, unknown>;
    if (item === null || typeof item !== 'object') out[key] = item;
    else if (replaceXml !== undefined && item instanceof XmlValue) out[key] = replaceXml(item);
    else if (!isNestingContainer(item)) out[key] = item;
    else if (onPath(path, item)) out[key] = '[circular]';
    else if (path.length === JSON_MAX_DEPTH) throw new NestingTooDeepError('the payload');
    else {
      const copy: Record<string, unknown> | unknown[] = Array.isArray(item) ? new Array<unknown>(item.length) : {};
      out[key] = copy;
      path.push(maskFrame(item, copy));
    }
  }
  return root;
}

/** True when `item` is one of the containers on the path (a cycle); the path is at most JSON_MAX_DEPTH long. */
function onPath(path: readonly MaskFrame[], item: object): boolean {
  for (let i = 0; i < path.length; i++) if (path[i]!.source === item) return true;
  return false;
}

/** A copy of a header map without the credential headers (names compared case-insensitively). */
export function stripCredentialHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADERS.has(k.toLowerCase())) out[k] = v;
  }
  return out;
}

/** An XML value is logged as this marker naming its root element, never as XML. */
function unrepresentableXml(value: XmlValue): unknown {
  return { _unrepresentable: value.root };
}

/** What is logged for a payload nesting deeper than the limit: the row is kept, its payload is not. */
export const TOO_DEEP_PAYLOAD: Readonly<Record<string, string>> = Object.freeze({
  _unrepresentable: `nests deeper than ${JSON_MAX_DEPTH} levels`,
});

/**
 * The payload as the event log keeps it: masked, an XML value replaced by its marker, a payload too
 * deep replaced by TOO_DEEP_PAYLOAD (one walk). Replay masks a candidate's output by it, so what it
 * compares is what the log recorded of the deployed version.
 */
export function loggablePayload(payload: unknown, mask: MaskSet): unknown {
  try {
    return maskPayload(payload, mask, { xml: unrepresentableXml });
  } catch (err) {
    if (err instanceof NestingTooDeepError) return TOO_DEEP_PAYLOAD;
    throw err;
  }
}

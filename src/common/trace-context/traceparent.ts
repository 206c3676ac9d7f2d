/**
 * The W3C Trace Context Level 1 headers, read strictly and written in version 00 (pure; no
 * OpenTelemetry). A header that breaks the rules is ignored, never an error: the caller then
 * starts a new trace (https://www.w3.org/TR/trace-context/ "traceparent Header Field Values").
 */

/** A parent's context as `traceparent` carries it: lowercase hex ids and the trace-flags byte. */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zero. */
  readonly spanId: string;
  /** The trace-flags: `SAMPLED` (1) or 0 (the only flag Level 1 defines). */
  readonly flags: number;
}

/** The `sampled` trace flag: the caller may have recorded its span. */
export const SAMPLED = 1;

/** Length of a version 00 `traceparent`: 2 + 1 + 32 + 1 + 16 + 1 + 2. */
const V00_LENGTH = 55;
const HEX_LC = /^[0-9a-f]+$/;
const ALL_ZERO = /^0+$/;

/**
 * Parses `traceparent`. Version 00 must be exactly 55 characters; a later version is read by its
 * first four fields when the 56th character is absent or a dash (the Level 1 rule for versions
 * this parser does not know); version `ff`, upper-case hex, all-zero ids are refused. Several
 * headers reach here joined by a comma and fail the length check, as the spec wants.
 */
export function parseTraceparent(value: string | undefined): TraceParent | undefined {
  if (value === undefined || value.length < V00_LENGTH) return undefined;
  if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return undefined;
  const version = value.slice(0, 2);
  if (!HEX_LC.test(version) || version === 'ff') return undefined;
  if (version === '00' ? value.length !== V00_LENGTH : value.length > V00_LENGTH && value[V00_LENGTH] !== '-')
    return undefined;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (!HEX_LC.test(traceId) || !HEX_LC.test(spanId) || !HEX_LC.test(flags)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  // Level 1 defines only `sampled` and has the other bits set to zero when propagating.
  return { traceId, spanId, flags: parseInt(flags, 16) & SAMPLED };
}

/** `traceparent` in version 00 for a span of a trace. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & SAMPLED) === SAMPLED ? '01' : '00'}`;
}

/** Most list-members a `tracestate` may have (Level 1). */
export const TRACESTATE_MAX_MEMBERS = 32;

/** A simple key, or a multi-tenant `tenant@system` key (Level 1 grammar). */
const TRACESTATE_KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
/** Printable ASCII but `,` and `=`, at most 256 characters, not ending in a space. */
const TRACESTATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * Checks `tracestate` (several headers arrive joined by commas, which is how the spec combines
 * them). Returns it with empty members and optional spaces around members dropped, or undefined
 * when any member breaks the grammar, a key repeats, or there are more than 32 members: an
 * invalid `tracestate` is not propagated. Only read when `traceparent` was valid.
 */
export function parseTracestate(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const part of value.split(',')) {
    const member = part.trim();
    if (member === '') continue;
    const eq = member.indexOf('=');
    if (eq <= 0) return undefined;
    const key = member.slice(0, eq);
    if (!TRACESTATE_KEY.test(key) || !TRACESTATE_VALUE.test(member.slice(eq + 1)) || keys.has(key)) return undefined;
    keys.add(key);
    members.push(member);
    if (members.length > TRACESTATE_MAX_MEMBERS) return undefined;
  }
  return members.length === 0 ? undefined : members.join(',');
}

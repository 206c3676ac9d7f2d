/** Turns an emitted log event into its stored row: masking, log level, payload cap (pure). */
import { isoMillis } from '../../common/clock.js';
import { jsonString } from '../../common/json-text.js';
import { GLOBAL_MASK, loggablePayload, MaskSet } from '../../common/mask.js';
import type { LogLevel } from '../../ir/types.js';
import {
  EVENT_KINDS,
  packRow,
  ROW_WIDTH,
  TRACE_EVENTS,
  type EventKind,
  type EventRow,
  type RowColumns,
} from '../contracts/index.js';

// The event kinds, the trace kinds, the stored row and its packed form are part of the store's contract
// (both stores insert packed batches); re-exported for the writers.
export { EVENT_KINDS, packRow, ROW_WIDTH, TRACE_EVENTS, type EventKind, type EventRow, type RowColumns };

/** Boundary events never carry a step: the writer clears it. */
export const BOUNDARY_EVENTS: ReadonlySet<string> = new Set([
  'received',
  'completed',
  'queue_enqueued',
  'queue_processed',
  'queue_filtered',
  'queue_failed',
  'dlq_moved',
]);

/** What a caller emits; `emit` serialises it at once, so the caller may reuse the payload afterwards. */
export interface LogEventInput {
  event: EventKind;
  /** ISO 8601 UTC; set at emit when absent. */
  ts?: string;
  correlation_id?: string | null;
  tenant?: string | null;
  flow?: string | null;
  step?: string | null;
  payload?: unknown;
  http_status?: number | null;
  /** Queue rows: `succeeded`, `fault_handled`, `filtered`, `failed`, ... */
  outcome?: string | null;
  /** Why, for an operator: access_denied, a failed or fault-handled delivery, a replay (docs/events.md). */
  reason?: string | null;
  /** W3C trace id (32 hex digits) of the execution or submission the row belongs to. */
  trace_id?: string | null;
  /** A delivery's terminal row: milliseconds from its entry (a queued one's enqueue) to its end (EventRow.duration_ms). */
  duration_ms?: number | null;
  /** The step that failed (terminal rows of failed or fault-handled deliveries, `queue_failed` rows). */
  failed_step?: string | null;
  /** The flow's log_level. @default 'payload_trimmed' */
  logLevel?: LogLevel;
  /** The flow's mask (global list plus its log_extra_mask_fields). @default the global list */
  mask?: MaskSet;
}

/**
 * Applies masking and the log level. `event_only` drops the payload; `payload_trimmed` caps its
 * JSON text at `payloadMaxBytes` (stored as a JSON string of the cut text, `payload_truncated` 1);
 * `full` and trace rows keep it whole. An XmlValue anywhere is replaced by `{_unrepresentable: <root>}`,
 * and a payload nesting deeper than JSON_MAX_DEPTH by TOO_DEEP_PAYLOAD (common/mask.ts; the row itself is kept).
 */
export function toEventRow(e: LogEventInput, payloadMaxBytes: number): EventRow {
  const flat: RowColumns = [];
  packEventRow(flat, e, e.ts ?? isoMillis(Date.now()), () => payloadMaxBytes);
  return unpackEventRows(flat)[0]!;
}

/**
 * Appends `e` as a row to `out` (see `toEventRow` for the rules). The payload limit is asked only
 * for `payload_trimmed` rows that carry a payload.
 */
export function packEventRow(out: RowColumns, e: LogEventInput, ts: string, payloadMaxBytes: () => number): void {
  const level: LogLevel = TRACE_EVENTS.has(e.event) ? 'full' : (e.logLevel ?? 'payload_trimmed');
  let payload: string | null = null;
  let truncated: 0 | 1 = 0;
  if (e.payload !== undefined && level !== 'event_only') {
    const text = JSON.stringify(loggablePayload(e.payload, e.mask ?? GLOBAL_MASK)) ?? null;
    const max = text !== null && level === 'payload_trimmed' ? payloadMaxBytes() : Infinity;
    if (text !== null && Buffer.byteLength(text) > max) {
      payload = JSON.stringify(cutUtf8(text, max));
      truncated = 1;
    } else {
      payload = text;
    }
  }
  out.push(
    ts,
    e.correlation_id ?? null,
    e.tenant ?? null,
    e.flow ?? null,
    BOUNDARY_EVENTS.has(e.event) ? null : (e.step ?? null),
    e.event,
    payload,
    truncated,
    e.http_status ?? null,
    e.outcome ?? null,
    e.reason ?? null,
    e.trace_id ?? null,
    e.duration_ms ?? null,
    e.failed_step ?? null,
  );
}

/** The rows of a packed batch. */
export function unpackEventRows(flat: Readonly<RowColumns>): EventRow[] {
  const rows: EventRow[] = [];
  for (let i = 0; i + ROW_WIDTH <= flat.length; i += ROW_WIDTH) {
    rows.push({
      ts: flat[i] as string,
      correlation_id: flat[i + 1] as string | null,
      tenant: flat[i + 2] as string | null,
      flow: flat[i + 3] as string | null,
      step: flat[i + 4] as string | null,
      event: flat[i + 5] as string,
      payload: flat[i + 6] as string | null,
      payload_truncated: flat[i + 7] as 0 | 1,
      http_status: flat[i + 8] as number | null,
      outcome: flat[i + 9] as string | null,
      reason: flat[i + 10] as string | null,
      trace_id: flat[i + 11] as string | null,
      duration_ms: flat[i + 12] as number | null,
      failed_step: flat[i + 13] as string | null,
    });
  }
  return rows;
}

/** JSON text of a column value that is a string or null. */
function jsonText(s: string | number | null): string {
  return s === null ? 'null' : jsonString(String(s));
}

/**
 * The JSON Lines form of the row at `i` of a packed batch (payload embedded as JSON, not as a
 * string), written from the columns directly: the writer thread builds no object per row.
 */
export function jsonLineAt(flat: Readonly<RowColumns>, i: number): string {
  let line = `{"ts":${jsonText(flat[i]!)},"correlation_id":${jsonText(flat[i + 1]!)},"tenant":${jsonText(flat[i + 2]!)},"flow":${jsonText(flat[i + 3]!)},"step":${jsonText(flat[i + 4]!)},"event":${jsonText(flat[i + 5]!)},"payload":${flat[i + 6] ?? 'null'}`;
  if (flat[i + 7]) line += ',"payload_truncated":true';
  line += `,"http_status":${flat[i + 8] ?? 'null'}`;
  if (flat[i + 9] !== null) line += `,"outcome":${jsonText(flat[i + 9]!)}`;
  if (flat[i + 10] !== null) line += `,"reason":${jsonText(flat[i + 10]!)}`;
  // Like outcome and reason, only when set: lines of rows outside a delivery stay as they were.
  if (flat[i + 11] !== null) line += `,"trace_id":${jsonText(flat[i + 11]!)}`;
  // Beyond the spec's row (docs/events.md), on terminal rows only: other lines stay as they were.
  if (flat[i + 12] !== null) line += `,"duration_ms":${flat[i + 12]}`;
  if (flat[i + 13] !== null) line += `,"failed_step":${jsonText(flat[i + 13]!)}`;
  return line + '}\n';
}

/** The JSON Lines form of a row. */
export function rowToJsonLine(r: EventRow): string {
  return jsonLineAt(packRow(r), 0);
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes that does not split a character. */
function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  let end = Math.min(maxBytes, buf.length);
  // The first excluded byte being a continuation byte means the cut splits a character: drop it whole.
  while (end > 0 && end < buf.length && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

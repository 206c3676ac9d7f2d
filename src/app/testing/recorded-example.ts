/**
 * A traced delivery turned into an example (issue 37, "from real traffic to a test"): the input the
 * delivery arrived with, each call out's recorded answer as that step's stub (in call order, so a
 * retried delivery's answers come back in turn), and what it answered as the expectation, written
 * as a `.test.md` section `svc test` runs. Pure: trace and log rows in, Markdown out.
 *
 * The rows are as the log keeps them, masked: a masked value stays `***`, and an XML value (never
 * recorded) stays its marker. Each such place is listed under `masked:`, which fails the example
 * until someone fills the values in and removes the list: a recording must not pass by testing
 * `***`.
 */
import { stringify } from 'yaml';
import { MASK } from '../../common/mask.js';
import type { StoredEvent } from '../../store/contracts/index.js';

/** Entry labels of a delivery's first trace row, and the door an example of it arrives by. */
const ENTRY_DOORS: Readonly<Record<string, 'run' | 'enqueue' | 'cron'>> = {
  received: 'run',
  dequeued: 'enqueue',
  scheduled: 'cron',
};
/** The columns of a trace row that replay and the recording read (a candidate's rows have no id or time). */
export type TraceRowLike = Pick<StoredEvent, 'event' | 'tenant' | 'flow' | 'step' | 'payload'>;

/** A delivery's first trace row: `received` (/run, SOAP, gRPC), `dequeued` (a queue) or `scheduled` (cron). */
export function isEntryRow(r: TraceRowLike): boolean {
  return r.event === 'step_traced' && r.step !== null && r.step in ENTRY_DOORS;
}

/** Trace labels that are not a step's output (composition's branch rows). */
export const BRANCH_LABEL = /^(?:foreach|split|fork)\[\d+\]$|^call_flow$|^enqueued$/;

export interface RecordedDelivery {
  readonly tenant: string;
  readonly flow: string;
  readonly correlationId: string;
  /** The delivery's trace rows (step_traced, egress_traced), oldest first, every flow it ran. */
  readonly traceRows: readonly StoredEvent[];
  /** Its boundary rows (completed, queue_processed, ...), any order. */
  readonly logRows: readonly StoredEvent[];
}

/** Why no example can be made of a delivery. */
export class NotRecordedError extends Error {
  override readonly name = 'NotRecordedError';
}

/** A recorded delivery as an example's spec (the YAML block's value), and where the log masked it. */
export interface RecordedSpec {
  readonly spec: Record<string, unknown>;
  readonly masked: readonly string[];
  /** When the delivery arrived (its entry row). */
  readonly ts: string;
}

/** The example section, or NotRecordedError when the delivery's entry was not traced. */
export function exampleFromDelivery(d: RecordedDelivery): string {
  const { spec, masked, ts } = recordedSpec(d);
  const lines = [
    `## Example: recorded delivery ${d.correlationId}`,
    '',
    `Recorded from the trace of delivery \`${d.correlationId}\` of ${d.tenant}/${d.flow} at ${ts}: its input, the`,
    'answers its call outs got (as stubs), and what it answered. Put this section in the flow file or in',
    `\`${d.flow}.test.md\` beside it, and give it a name that says what it shows.`,
  ];
  if (masked.length > 0)
    lines.push(
      '',
      `The log masks ${masked.length === 1 ? 'one value' : `${masked.length} values`} of it (\`${MASK}\`, or an XML value it never records):`,
      'fill them in, then remove `masked:`. Until then the example fails.',
    );
  lines.push('', '```yaml', stringify(spec, { lineWidth: 0 }).trimEnd(), '```', '');
  return lines.join('\n');
}

/** The spec of a recorded delivery (replay runs it against a candidate); NotRecordedError when its entry was not traced. */
export function recordedSpec(d: RecordedDelivery): RecordedSpec {
  const mine = (r: StoredEvent) => r.flow === d.flow && r.tenant === d.tenant;
  const entries = d.traceRows.filter((r) => mine(r) && isEntryRow(r));
  const entry = entries[0];
  if (entry === undefined)
    throw new NotRecordedError(
      `delivery ${d.correlationId} of ${d.tenant}/${d.flow} has no traced entry row: it was not traced (turn tracing on for the flow, then take a new delivery)`,
    );
  const door = ENTRY_DOORS[entry.step!]!;

  const spec: Record<string, unknown> = {};
  if (door !== 'run') spec.door = door;
  if (door !== 'cron') spec.input = entry.payload;
  spec.correlation_id = d.correlationId;
  spec.now = entry.ts;

  const stubs: Record<string, unknown[]> = {};
  for (const r of d.traceRows) {
    if (r.event !== 'egress_traced' || r.step === null) continue;
    const list = (stubs[r.step] ??= []);
    if (r.http_status === null) list.push(/within|timed? ?out/i.test(r.reason ?? '') ? 'timeout' : 'refused');
    else {
      const p = (r.payload ?? {}) as { headers?: Record<string, string>; body?: unknown };
      const stub: Record<string, unknown> = { status: r.http_status };
      const contentType = p.headers?.['content-type'];
      if (contentType !== undefined) stub.headers = { 'content-type': contentType };
      if (p.body !== null && p.body !== undefined) stub.body = p.body;
      list.push(stub);
    }
  }
  if (Object.keys(stubs).length > 0)
    spec.stubs = Object.fromEntries(Object.entries(stubs).map(([k, v]) => [k, v.length === 1 ? v[0] : v]));

  const expect: Record<string, unknown> = {};
  const end = d.logRows.find(
    (r) => r.event === 'completed' || r.event === 'queue_processed' || r.event === 'queue_filtered',
  );
  if (end?.event === 'queue_filtered') expect.outcome = 'filtered';
  if (end !== undefined && end.http_status !== null && end.event !== 'queue_filtered') expect.status = end.http_status;
  if (door === 'enqueue' && entries.length > 0) expect.attempts = entries.length;
  const output = lastOutput(d.traceRows.filter(mine));
  if (output !== undefined && end?.event !== 'queue_filtered') expect.body = output;
  if (Object.keys(expect).length === 0) expect.outcome = 'completed';
  // Where the log masked a value, by the path the example's spec gives it.
  const masked: string[] = [];
  for (const key of ['input', 'stubs'] as const) if (spec[key] !== undefined) markMasked(spec[key], key, masked);
  if (expect.body !== undefined) markMasked(expect.body, 'expect.body', masked);
  if (masked.length > 0) spec.masked = masked;
  spec.expect = expect;
  return { spec, masked, ts: entry.ts };
}

/** The top flow's last step output: its last trace row that is neither an entry nor a branch label. */
export function lastOutput(rows: readonly TraceRowLike[]): unknown {
  for (let i = rows.length - 1; i >= 0; i--) {
    const r = rows[i]!;
    if (r.step === null || r.step in ENTRY_DOORS || BRANCH_LABEL.test(r.step)) continue;
    if (r.event === 'step_traced') return r.payload;
    if (r.event === 'egress_traced') return (r.payload as { body?: unknown } | null)?.body ?? null;
  }
  return undefined;
}

/** Adds the path of every masked value (and of every XML value the log did not record) under `value`. */
function markMasked(value: unknown, at: string, out: string[]): void {
  if (value === MASK) {
    out.push(at);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => markMasked(v, `${at}[${i}]`, out));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (Object.hasOwn(value, '_unrepresentable')) {
    out.push(at);
    return;
  }
  for (const [k, v] of Object.entries(value))
    markMasked(v, /^[A-Za-z_][\w-]*$/.test(k) ? `${at}.${k}` : `${at}['${k}']`, out);
}

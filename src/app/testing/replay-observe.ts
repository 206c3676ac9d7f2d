/**
 * What a delivery did, read from its trace rows and its end, the same way for a recording (rows
 * from the log) and for a candidate run (the rows it emitted, masked as the log masks them): what
 * replay compares. Pure.
 */
import { GLOBAL_MASK, loggablePayload, stripCredentialHeaders, type MaskSet } from '../../common/mask.js';
import type { FlowIR, StepIR } from '../../ir/types.js';
import type { LogEventInput } from '../../engine/index.js';
import { BRANCH_LABEL, isEntryRow, lastOutput, type RecordedDelivery, type TraceRowLike } from './recorded-example.js';
import type { ExampleRun } from './run-example.js';

/** How a delivery ended, in the words both sides share. */
export type ObservedOutcome = 'answered' | 'fault_handled' | 'filtered' | 'dead_lettered';

export interface Observation {
  /** The answer's status (a delivery that ended without one has none). */
  readonly status?: number;
  /**
   * A /run delivery: the headers it was answered with, masked (credentials stripped). Tracing does
   * not record them: the recording's side is the deployed version's replay.
   */
  readonly headers?: Readonly<Record<string, string>>;
  readonly outcome: ObservedOutcome;
  /** A queue delivery: how many times it was delivered. */
  readonly attempts?: number;
  /** The trace labels in order after the entry: each step (`flow:step` in a called flow), branch rows, a retry's `dequeued`. */
  readonly steps: readonly string[];
  /** The last output (what was answered), masked; undefined when no step traced one. */
  readonly body?: unknown;
  /** By target queue (flow), each queue_publish step's message in order, masked. */
  readonly published: Readonly<Record<string, unknown[]>>;
}

/** The IR of a flow by tenant and name, when known. */
export type IrOf = (tenant: string, flow: string) => FlowIR | undefined;

/** The recording's side. */
export function observeRecording(d: RecordedDelivery, irOf: IrOf): Observation {
  const rows = ownRows(d.traceRows, d.flow);
  const top = rows.filter((r) => r.flow === d.flow);
  const entries = top.filter(isEntryRow);
  const queued = entries[0]?.step === 'dequeued';
  const has = (event: string) => d.logRows.some((r) => r.event === event);
  const end = d.logRows.find((r) => r.event === 'completed' || r.event === 'queue_processed');
  const outcome: ObservedOutcome = has('queue_filtered')
    ? 'filtered'
    : has('dlq_moved')
      ? 'dead_lettered'
      : end?.outcome === 'fault_handled'
        ? 'fault_handled'
        : 'answered';
  return {
    ...(end?.http_status != null && outcome !== 'filtered' ? { status: end.http_status } : {}),
    outcome,
    ...(queued ? { attempts: entries.length } : {}),
    ...traced(rows, d.flow, irOf),
  };
}

/** The candidate's side: its run, and the rows it emitted (masked here by the mask each row carries). */
export function observeCandidate(
  d: Pick<RecordedDelivery, 'flow'>,
  emitted: readonly LogEventInput[],
  run: ExampleRun,
  irOf: IrOf,
): Observation {
  const rows: TraceRowLike[] = emitted
    .filter((e) => e.event === 'step_traced' || e.event === 'egress_traced')
    .map((e) => ({
      event: e.event,
      tenant: e.tenant ?? null,
      flow: e.flow ?? null,
      step: e.step ?? null,
      // Through JSON as the log stores it: an undefined field is gone, a Buffer is its JSON form.
      payload:
        e.payload === undefined
          ? null
          : (JSON.parse(JSON.stringify(loggablePayload(e.payload, e.mask!)) ?? 'null') as unknown),
    }));
  const outcome: ObservedOutcome =
    run.outcome === 'filtered' || run.outcome === 'dead_lettered' || run.outcome === 'fault_handled'
      ? run.outcome
      : 'answered';
  const answered = run.status !== 0 && run.attempts === undefined;
  return {
    ...(outcome !== 'filtered' && outcome !== 'dead_lettered' ? { status: run.status } : {}),
    ...(answered ? { headers: loggableHeaders(run.headers, emitted[0]?.mask) } : {}),
    outcome,
    ...(run.attempts !== undefined ? { attempts: run.attempts } : {}),
    ...traced(rows, d.flow, irOf),
  };
}

/** Headers as the log would keep them: credentials left out, the mask's names masked. */
function loggableHeaders(headers: Readonly<Record<string, string>>, mask: MaskSet | undefined): Record<string, string> {
  return loggablePayload(stripCredentialHeaders(headers), mask ?? GLOBAL_MASK) as Record<string, string>;
}

/** Steps, answer and publications, from a delivery's own trace rows. */
function traced(
  rows: readonly TraceRowLike[],
  flow: string,
  irOf: IrOf,
): Pick<Observation, 'steps' | 'body' | 'published'> {
  const steps: string[] = [];
  const published: Record<string, unknown[]> = {};
  let first = true;
  let previous: TraceRowLike | undefined;
  for (const r of rows) {
    if (r.step === null) continue;
    if (first && isEntryRow(r) && r.flow === flow) {
      first = false;
      continue;
    }
    const label = r.flow === flow ? r.step : `${r.flow}:${r.step}`;
    // A call out with a template after it writes egress_traced, then step_traced: one step ran.
    const again =
      previous?.event === 'egress_traced' &&
      r.event === 'step_traced' &&
      previous.step === r.step &&
      previous.flow === r.flow;
    if (!again) steps.push(label);
    previous = r;
    if (r.event !== 'step_traced' || BRANCH_LABEL.test(r.step) || isEntryRow(r)) continue;
    const target = stepOf(r.tenant === null || r.flow === null ? undefined : irOf(r.tenant, r.flow), r.step)?.queue;
    if (target !== undefined) (published[target] ??= []).push(r.payload);
  }
  const body = lastOutput(rows.filter((r) => r.flow === flow));
  return { steps, ...(body !== undefined ? { body } : {}), published };
}

/**
 * A delivery's rows without those of other deliveries that share its correlation id: a flow it
 * published to (traced, it enters by `enqueued` and `dequeued`) runs its own delivery.
 */
function ownRows(rows: readonly TraceRowLike[], flow: string): TraceRowLike[] {
  const others = new Set<string | null>();
  for (const r of rows) if (r.flow !== flow && (isEntryRow(r) || r.step === 'enqueued')) others.add(r.flow);
  return rows.filter((r) => !others.has(r.flow) && !(r.flow === flow && r.step === 'enqueued'));
}

function stepOf(ir: FlowIR | undefined, name: string): StepIR | undefined {
  return ir?.steps.find((s) => s.name === name) ?? ir?.fault?.steps.find((s) => s.name === name);
}

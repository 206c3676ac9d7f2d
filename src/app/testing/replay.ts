/**
 * Replay (issue 38): a recorded delivery run again through a candidate version of its flow, with
 * every call out answered from that delivery's recorded exchanges and the clock at the delivery's
 * time, by the same runner as `svc test` (nothing is written, nothing leaves the process).
 *
 * The candidate runs with tracing on into memory, its rows masked as the log masks them, so both
 * sides are read the same way (observe.ts): the status and outcome, which steps ran, the last
 * output (the answer), and what each queue_publish step published to which queue. The verdict names
 * paths, never values: the trace rows it is made of are the support role's alone.
 *
 * A value the log masked in what entered (the input, a recorded answer) cannot be given back as it
 * was. The candidate runs twice with two stand-ins of different types in its place: when the two
 * runs do anything differently (their answer, steps, publications, or what they send out), the
 * candidate needs the value and the delivery is not replayable; otherwise the masked value did not
 * matter and the first run is compared.
 */
import { MASK } from '../../common/mask.js';
import type { LoadedFlow, LogEventInput } from '../../engine/index.js';
import { readExampleSpec } from './example-spec.js';
import { observeCandidate, observeRecording, type Observation } from './replay-observe.js';
import { NotRecordedError, recordedSpec, type RecordedDelivery } from './recorded-example.js';
import { runExample, type ExampleContext, type ExampleRun } from './run-example.js';
import { differences } from './value-paths.js';

export type ReplayVerdict =
  | { readonly kind: 'same' }
  /** Where the candidate's answer differs from the recorded one (paths only). */
  | { readonly kind: 'differs'; readonly paths: readonly string[] }
  | { readonly kind: 'not_replayable'; readonly why: string };

/** One delivery's verdict, with both sides for the support role's page (never printed by the CLI). */
export interface ReplayResult {
  readonly correlationId: string;
  /** When the delivery arrived (its entry row), when it has one. */
  readonly ts?: string;
  readonly verdict: ReplayVerdict;
  /** What the deployed version did, as recorded (masked as the log keeps it). */
  readonly recorded?: Observation;
  /** What the candidate did (masked the same way). */
  readonly candidate?: Observation;
}

export interface ReplayOptions {
  /** Differences at or below these paths are not counted (`body.id`, `body.items[*].at`): volatile values. */
  readonly ignore?: readonly string[];
  /** Also leave out the paths the candidate declares in `replay_volatile`. @default false */
  readonly ignoreVolatile?: boolean;
  /**
   * The deployed flows: which queue each recorded queue_publish step wrote to (a candidate may
   * change the target), and the version whose replay stands for the recording's headers (tracing
   * records none). @default the candidate's flows, and no headers compared
   */
  readonly deployed?: (tenant: string, flow: string) => LoadedFlow | undefined;
}

/** Replays one delivery against `candidate`. */
export async function replayDelivery(
  candidate: LoadedFlow,
  delivery: RecordedDelivery,
  context: ExampleContext,
  opts: ReplayOptions = {},
): Promise<ReplayResult> {
  const id = delivery.correlationId;
  let recordedOf;
  try {
    recordedOf = recordedSpec(delivery);
  } catch (err) {
    if (err instanceof NotRecordedError)
      return {
        correlationId: id,
        verdict: { kind: 'not_replayable', why: 'no traced entry: the delivery predates tracing' },
      };
    throw err;
  }
  const { spec: raw, masked, ts } = recordedOf;
  const result = (verdict: ReplayVerdict, recorded?: Observation, cand?: Observation): ReplayResult => ({
    correlationId: id,
    ts,
    verdict,
    recorded,
    candidate: cand,
  });
  const notReplayable = (why: string, seen?: Observation) => result({ kind: 'not_replayable', why }, seen);

  const candidateIr = (tenant: string, flow: string) => context.flows.get(`${tenant}/${flow}`)?.ir;
  const deployedIr = opts.deployed && ((tenant: string, flow: string) => opts.deployed!(tenant, flow)?.ir);
  const traced = observeRecording(delivery, deployedIr ?? candidateIr);
  const entering = masked.filter((p) => !p.startsWith('expect.'));
  const xmlIn = entering.filter((p) => !holdsMask(raw, p));
  if (xmlIn.length > 0)
    return notReplayable(`an XML value it received is kept by the log as a marker (${xmlIn.join(', ')})`, traced);
  // The recording's answer (expect.body) has its places listed too: a marker there is an XML answer.
  if (masked.some((p) => p.startsWith('expect.') && !holdsMask(raw, p)))
    return notReplayable('its answer is an XML value, which the log keeps only as a marker', traced);

  const runWith = async (standIn: unknown, flow: LoadedFlow = candidate) => {
    const { spec, problems } = readExampleSpec(withStandIn(raw, standIn), () => undefined);
    if (spec === undefined) return { problems: problems.map((p) => p.message).join('; ') };
    const rows: LogEventInput[] = [];
    const run = await runExample(flow, spec, { ...context, events: { emit: (e) => rows.push(e) } });
    return { run, observed: observeCandidate(delivery, rows, run, candidateIr) };
  };
  const first = await runWith(MASK);
  if (first.run === undefined) return notReplayable(`its recording does not read: ${first.problems}`, traced);
  const missing = first.run.missingStub;
  if (missing !== undefined) {
    const step = /^step '([^']+)'/.exec(missing)?.[1] ?? 'a step';
    return notReplayable(`the candidate calls out at step '${step}', where the recording has no exchange`, traced);
  }
  if (entering.length > 0) {
    const second = await runWith(0);
    if (second.run === undefined || !sameRuns(first.run, first.observed, second.run, second.observed))
      return notReplayable(`the candidate needs a value the log masked (${entering.join(', ')})`, traced);
  }
  // Tracing records no answer's headers: the deployed version, replayed alike, stands for them.
  const baseline = raw.door === undefined ? opts.deployed?.(delivery.tenant, delivery.flow) : undefined;
  const headers = baseline === undefined ? undefined : (await runWith(MASK, baseline)).observed?.headers;
  // Keys in the candidate's order, so the two sides read alike on the support page.
  const { status, ...rest } = traced;
  const recorded = headers === undefined ? traced : { ...(status !== undefined ? { status } : {}), headers, ...rest };
  const ignored = ignoring([
    ...(opts.ignore ?? []),
    ...(opts.ignoreVolatile ? (candidate.ir.replayVolatile ?? []) : []),
  ]);
  const paths = compareObservations(recorded, first.observed).filter((p) => !ignored(p));
  return result(paths.length === 0 ? { kind: 'same' } : { kind: 'differs', paths }, recorded, first.observed);
}

/** The paths where the candidate's observation differs from the recorded one. */
export function compareObservations(recorded: Observation, candidate: Observation): string[] {
  const out: string[] = [];
  if (recorded.status !== undefined && recorded.status !== candidate.status) out.push('status');
  if (recorded.headers !== undefined)
    for (const d of differences(recorded.headers, candidate.headers ?? {})) out.push(`headers${d.path.slice(1)}`);
  if (recorded.outcome !== candidate.outcome) out.push('outcome');
  if (recorded.attempts !== undefined && recorded.attempts !== candidate.attempts) out.push('attempts');
  if (differences(recorded.steps, candidate.steps).length > 0) out.push('steps');
  for (const d of differences(recorded.body ?? null, candidate.body ?? null)) out.push(`body${d.path.slice(1)}`);
  for (const d of differences(recorded.published, candidate.published)) out.push(`published${d.path.slice(1)}`);
  return out;
}

/** The two stand-in runs did the same: same observation, same calls out (method, URL, headers, body). */
function sameRuns(a: ExampleRun, ao: Observation, b: ExampleRun, bo: Observation): boolean {
  return compareObservations(ao, bo).length === 0 && differences(a.calls, b.calls).length === 0;
}

/** A matcher of the paths to leave out: a path, or anything below it; `[*]` stands for any item. */
export function ignoring(patterns: readonly string[]): (path: string) => boolean {
  const res = patterns.map(
    (p) => new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\[\\\*\\\]/g, '\\[\\d+\\]')}(?:$|[.[])`),
  );
  return (path) => res.some((re) => re.test(path));
}

/** The spec with every masked value of what enters (input, stubs) replaced by `standIn`, and no `masked:` list. */
function withStandIn(spec: Record<string, unknown>, standIn: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...spec };
  delete copy.masked;
  for (const key of ['input', 'stubs'] as const)
    if (copy[key] !== undefined) copy[key] = replaceMask(copy[key], standIn);
  return copy;
}

function replaceMask(value: unknown, standIn: unknown): unknown {
  if (value === MASK) return standIn;
  if (Array.isArray(value)) return value.map((v) => replaceMask(v, standIn));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceMask(v, standIn)]));
}

/** True when the value at a `masked:` path of the spec is the mask (else it is an XML marker). */
function holdsMask(spec: Record<string, unknown>, path: string): boolean {
  let v: unknown = spec;
  for (const m of path.matchAll(/\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]|^([A-Za-z_]\w*)/g)) {
    const key = m[1] ?? m[3] ?? m[4] ?? Number(m[2]);
    if (typeof v !== 'object' || v === null) return false;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v === MASK;
}

/**
 * Replay (issue 38, first part): a recorded delivery run again through a candidate version of its
 * flow, with every call out answered from that delivery's recorded exchanges and the clock at the
 * delivery's time, by the same runner as `svc test` (nothing is written, nothing leaves the
 * process); what the candidate answers is compared with what the deployed version answered. The
 * verdict names paths, never values: the trace rows it is made of are the support role's alone.
 */
import type { LoadedFlow } from '../../engine/index.js';
import { checkExample } from './check-example.js';
import { readExampleSpec } from './example-spec.js';
import { NotRecordedError, recordedSpec, type RecordedDelivery } from './recorded-example.js';
import { runExample, type ExampleContext } from './run-example.js';

export type ReplayVerdict =
  | { readonly kind: 'same' }
  /** Where the candidate's answer differs from the recorded one (paths only). */
  | { readonly kind: 'differs'; readonly paths: readonly string[] }
  | { readonly kind: 'not_replayable'; readonly why: string };

export interface ReplayResult {
  readonly correlationId: string;
  readonly verdict: ReplayVerdict;
}

export interface ReplayOptions {
  /** Differences at or below these paths are not counted (`body.id`, `headers.x-request-id`): volatile values. */
  readonly ignore?: readonly string[];
}

/** Replays one delivery against `candidate`. */
export async function replayDelivery(
  candidate: LoadedFlow,
  delivery: RecordedDelivery,
  context: ExampleContext,
  opts: ReplayOptions = {},
): Promise<ReplayResult> {
  const notReplayable = (why: string): ReplayResult => ({
    correlationId: delivery.correlationId,
    verdict: { kind: 'not_replayable', why },
  });
  let recorded;
  try {
    recorded = recordedSpec(delivery);
  } catch (err) {
    if (err instanceof NotRecordedError) return notReplayable('no traced entry: the delivery predates tracing');
    throw err;
  }
  if (recorded.masked.length > 0)
    return notReplayable(
      `the log masked what it needs (${recorded.masked.join(', ')}) or kept an XML value as a marker`,
    );
  const { spec, problems } = readExampleSpec(recorded.spec, () => undefined);
  if (spec === undefined)
    return notReplayable(`its recording does not read: ${problems.map((p) => p.message).join('; ')}`);
  const run = await runExample(candidate, spec, context);
  if (run.missingStub !== undefined) {
    const step = /^step '([^']+)'/.exec(run.missingStub)?.[1] ?? 'a step';
    return notReplayable(`the candidate calls out at step '${step}', where the recording has no exchange`);
  }
  const ignored = (what: string) =>
    (opts.ignore ?? []).some((p) => what === p || what.startsWith(`${p}.`) || what.startsWith(`${p}[`));
  const paths = checkExample(spec.expect, run)
    .map((m) => m.what)
    .filter((what) => !ignored(what));
  return {
    correlationId: delivery.correlationId,
    verdict: paths.length === 0 ? { kind: 'same' } : { kind: 'differs', paths },
  };
}

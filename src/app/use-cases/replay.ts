/**
 * `svc replay`'s use case (issue 38, first part): the traced deliveries of a flow (since a time,
 * one correlation id, or the last N), each replayed against a candidate (app/testing/replay.ts).
 * Trace rows are read here for the operator's command, which prints verdicts and paths only.
 */
import { recordedDeliveryRows, type EventLogStore, type ReplayQuery } from './replay-rows.js';

export type { ReplayQuery };
import { replayDelivery, type ReplayOptions, type ReplayResult } from '../testing/replay.js';
import type { ExampleContext } from '../testing/run-example.js';
import type { LoadedFlow } from '../../engine/index.js';

/** Every delivery found, replayed in the order they arrived. */
export async function replayRecorded(
  log: EventLogStore,
  q: ReplayQuery,
  candidate: LoadedFlow,
  context: ExampleContext,
  opts: ReplayOptions = {},
): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for await (const delivery of recordedDeliveryRows(log, q))
    results.push(await replayDelivery(candidate, delivery, context, opts));
  return results;
}

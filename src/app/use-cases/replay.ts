/**
 * Replay's use case (issue 38): the traced deliveries of a flow (since a time, one correlation id,
 * or the last N), each replayed against a candidate (app/testing/replay.ts). A flow the candidate
 * calls, splits to or forks resolves to the tenant's deployed version unless the candidate's own
 * files give it; the recording's queue targets are read from the deployed flows. The CLI prints
 * verdicts and paths only; the support role's UI page shows the values too.
 */
import { irOfArtifact } from '../runtime/flow-loader.js';
import { replayDelivery, type ReplayOptions, type ReplayResult } from '../testing/replay.js';
import type { ExampleContext } from '../testing/run-example.js';
import type { LoadedFlow } from '../../engine/index.js';
import { IntegrityError } from '../../common/errors.js';
import type { ArtifactsStore } from '../../store/contracts/index.js';
import { recordedDeliveryRows, type EventLogStore, type ReplayQuery } from './replay-rows.js';

export type { ReplayQuery, ReplayResult };

export interface ReplaySources {
  readonly log: EventLogStore;
  /** The registry: the deployed flows of the tenant. */
  readonly artifacts: Pick<ArtifactsStore, 'listLatest' | 'getArtifact'>;
}

/** The counts of a replay's verdicts. */
export interface ReplayCounts {
  readonly deliveries: number;
  readonly same: number;
  readonly differs: number;
  readonly not_replayable: number;
}

/** Every delivery found, replayed in the order they arrived. `context.flows` holds the candidate and its own files. */
export async function replayRecorded(
  sources: ReplaySources,
  q: ReplayQuery,
  candidate: LoadedFlow,
  context: ExampleContext,
  opts: Omit<ReplayOptions, 'deployedIr'> = {},
): Promise<ReplayResult[]> {
  const deployed = await deployedFlows(sources.artifacts, q.tenant);
  const flows = new Map([...deployed, ...context.flows]);
  const deployedIr = (tenant: string, flow: string) => deployed.get(`${tenant}/${flow}`)?.ir;
  const results: ReplayResult[] = [];
  for await (const delivery of recordedDeliveryRows(sources.log, q))
    results.push(await replayDelivery(candidate, delivery, { ...context, flows }, { ...opts, deployedIr }));
  return results;
}

export function countVerdicts(results: readonly ReplayResult[]): ReplayCounts {
  const counts = { deliveries: results.length, same: 0, differs: 0, not_replayable: 0 };
  for (const r of results) counts[r.verdict.kind] += 1;
  return counts;
}

/** The latest version of each flow of the tenant (an unreadable artifact is left out: the candidate cannot call it). */
async function deployedFlows(artifacts: ReplaySources['artifacts'], tenant: string): Promise<Map<string, LoadedFlow>> {
  const out = new Map<string, LoadedFlow>();
  for (const ref of await artifacts.listLatest()) {
    if (ref.tenant !== tenant) continue;
    try {
      const ir = irOfArtifact(ref.hash, await artifacts.getArtifact(ref.hash));
      out.set(`${ref.tenant}/${ref.name}`, { ir, version: ref.version, hash: ref.hash, created_at: ref.created_at });
    } catch (err) {
      if (!(err instanceof IntegrityError)) throw err;
    }
  }
  return out;
}

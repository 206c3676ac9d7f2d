/**
 * `svc deploy --replay-since <dur>` (issue 38): before a deploy publishes anything, each flow's
 * deliveries traced since then are replayed against the version about to be published, the flows
 * of the same deploy resolving each other (they go live together). A difference refuses the whole
 * deploy unless the operator accepts differences; either way the counts go into each flow's
 * `flow.deployed` audit entry.
 */
import type { ExampleContext } from '../testing/run-example.js';
import type { ReplayResult } from '../testing/replay.js';
import { candidateFlow } from '../testing/candidate.js';
import type { CompiledFlow } from './publish.js';
import type { ReplayCounts, ReplaySources } from './replay.js';
import type { EventLogStore } from './replay-rows.js';

/** What a deploy replays, and how it decides. */
export interface DeployReplay {
  readonly log: EventLogStore;
  /** ISO 8601 UTC: the deliveries that arrived at or after it. */
  readonly since: string;
  /** Publish even when a delivery differs (the counts are audited all the same). */
  readonly acceptDifferences: boolean;
  /** Leave out the paths each flow declares in `replay_volatile`. */
  readonly ignoreVolatile: boolean;
  /** The runner's doors and flow-state store (the composition's). */
  readonly context: Omit<ExampleContext, 'flows'>;
}

/** One flow's replay before its deploy. */
export interface FlowReplay {
  readonly file: string;
  readonly tenant: string;
  readonly flow: string;
  readonly counts: ReplayCounts;
  readonly results: readonly ReplayResult[];
}

/** A replay before a deploy found differences and none were accepted: nothing was published. */
export class ReplayDiffersError extends Error {
  constructor(readonly replays: readonly FlowReplay[]) {
    const differing = replays.filter((r) => r.counts.differs > 0).map((r) => `${r.tenant}/${r.flow}`);
    super(
      `replay found deliveries that differ (${differing.join(', ')}); nothing was published (--accept-differences publishes all the same)`,
    );
    this.name = 'ReplayDiffersError';
  }
}

/** Replays every flow of the deploy, in order; each flow's candidate is its compiled file. */
export async function replayBeforeDeploy(
  candidates: readonly { readonly file: string; readonly flow: CompiledFlow }[],
  artifacts: ReplaySources['artifacts'],
  gate: DeployReplay,
): Promise<FlowReplay[]> {
  // Loaded here, not with the deploy: svc test's runner (and undici's mock agent) only for a replay.
  const { countVerdicts, replayRecorded } = await import('./replay.js');
  const together = new Map(
    candidates.map(({ flow: c }) => [`${c.ir.tenant}/${c.ir.flow}`, candidateFlow(c.ir, c.hash)]),
  );
  const out: FlowReplay[] = [];
  for (const { file, flow: c } of candidates) {
    const { tenant, flow } = c.ir;
    const results = await replayRecorded(
      { log: gate.log, artifacts },
      { tenant, flow, since: gate.since },
      together.get(`${tenant}/${flow}`)!,
      { ...gate.context, flows: together },
      { ignoreVolatile: gate.ignoreVolatile },
    );
    out.push({ file, tenant, flow, counts: countVerdicts(results), results });
  }
  return out;
}

/** What a flow's `flow.deployed` audit entry says of its replay. */
export function replayAudit(r: FlowReplay, gate: DeployReplay): Record<string, unknown> {
  const { deliveries, same, differs, not_replayable } = r.counts;
  return {
    since: gate.since,
    deliveries,
    same,
    differs,
    not_replayable,
    accepted_differences: differs > 0 && gate.acceptDifferences,
  };
}

/**
 * Replay's use case (issue 38): the traced deliveries of a flow (since a time, one correlation id,
 * or the last N), each replayed against a candidate (app/testing/replay.ts). A flow the candidate
 * calls, splits to or forks resolves to the tenant's deployed version unless the candidate's own
 * files give it; the recording's queue targets are read from the deployed flows. The CLI prints
 * verdicts and paths only; the support role's UI page shows the values too.
 */
import { irOfArtifact } from '../runtime/flow-loader.js';
import { candidateFlow } from '../testing/candidate.js';
import { replayDelivery, type ReplayOptions, type ReplayResult } from '../testing/replay.js';
import type { ExampleContext } from '../testing/run-example.js';
import type { LoadedFlow } from '../../engine/index.js';
import { IntegrityError, SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';
import { compileFlow } from '../../flow/compile.js';
import { formatDiagnostic } from '../../flow/diagnostics.js';
import { requirePermission, type Actor } from '../accounts/roles.js';
import type { ArtifactsStore } from '../../store/contracts/index.js';
import { recordedDeliveryRows, UI_REPLAY_MAX, type EventLogStore, type ReplayQuery } from './replay-rows.js';

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
  opts: Omit<ReplayOptions, 'deployed'> = {},
): Promise<ReplayResult[]> {
  const deployed = await deployedFlows(sources.artifacts, q.tenant);
  const flows = new Map([...deployed, ...context.flows]);
  const deployedOf = (tenant: string, flow: string) => deployed.get(`${tenant}/${flow}`);
  const results: ReplayResult[] = [];
  for await (const delivery of recordedDeliveryRows(sources.log, q))
    results.push(await replayDelivery(candidate, delivery, { ...context, flows }, { ...opts, deployed: deployedOf }));
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

/** A replay asked for on the support role's page: the candidate is the uploaded file's text. */
export interface SupportReplayRequest {
  readonly tenant: string;
  readonly flow: string;
  /** The candidate `.flow.md` as uploaded, and its file name (for diagnostics). */
  readonly source: string;
  readonly fileName: string;
  readonly since?: string;
  readonly correlationId?: string;
  readonly last?: number;
  readonly ignore?: readonly string[];
  readonly ignoreVolatile?: boolean;
}

export interface SupportReplay {
  /** The candidate does not compile: each diagnostic as `file:line: step: message`; nothing was replayed. */
  readonly refused?: readonly string[];
  readonly results: readonly ReplayResult[];
  readonly counts: ReplayCounts;
  /** More deliveries matched than UI_REPLAY_MAX: the latest of them were replayed. */
  readonly capped: boolean;
}

/**
 * Replays for the support role (trace rows, and so the values this shows, are theirs alone): the
 * uploaded candidate compiled and not deployed, against at most UI_REPLAY_MAX of the flow's latest
 * recorded deliveries in the window.
 * A candidate that does not compile is answered with its diagnostics (`refused`) and nothing run.
 * @throws SvcError 403 for any other role, 400 for a name breaking the rule or a candidate of another flow
 */
export async function replayForSupport(
  sources: ReplaySources,
  context: Omit<ExampleContext, 'flows'>,
  req: SupportReplayRequest,
  actor: Actor,
): Promise<SupportReplay> {
  requirePermission(actor, 'read_traces', 'replay traced deliveries');
  for (const [what, value] of [
    ['tenant', req.tenant],
    ['flow', req.flow],
  ] as const) {
    const problem = describeNameProblem(what, value);
    if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
  }
  const compiled = compileFlow(req.source, { file: req.fileName });
  if (compiled.ir === undefined || compiled.hash === undefined)
    return {
      refused: compiled.diagnostics.map(formatDiagnostic),
      results: [],
      counts: countVerdicts([]),
      capped: false,
    };
  if (compiled.ir.tenant !== req.tenant || compiled.ir.flow !== req.flow)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `${req.fileName} is flow ${compiled.ir.tenant}/${compiled.ir.flow}, not ${req.tenant}/${req.flow}`,
    );
  const candidate = candidateFlow(compiled.ir, compiled.hash);
  const last = Math.min(req.last ?? UI_REPLAY_MAX, UI_REPLAY_MAX);
  // One more than shown, to know whether the window held more.
  const found = await replayRecorded(
    sources,
    { tenant: req.tenant, flow: req.flow, since: req.since, correlationId: req.correlationId, last: last + 1 },
    candidate,
    { ...context, flows: new Map([[`${req.tenant}/${req.flow}`, candidate]]) },
    { ignore: req.ignore, ignoreVolatile: req.ignoreVolatile },
  );
  const results = found.slice(-last);
  return { results, counts: countVerdicts(results), capped: found.length > last };
}

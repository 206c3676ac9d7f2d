/**
 * The registry as the UI's Registry pages show it: the latest version of every flow, and one flow's
 * versions with the source and compiled artifact of one of them.
 */
import { IntegrityError, SvcError } from '../../common/errors.js';
import type { ArtifactsStore, EventLogStore } from '../../store/contracts/index.js';
import type { DiagramNumbers } from '../diagram/diagram-svg.js';
import { flowNumbers } from './flow-numbers.js';
import type { LatestRef, VersionListing } from '../../store/contracts/index.js';
import { irOfArtifact } from '../runtime/flow-loader.js';
import { drawFlow } from './flow-diagram.js';

export type { LatestRef, VersionListing };

/** The latest version of every flow, by tenant and name. */
export async function listLatestFlows(artifacts: ArtifactsStore): Promise<LatestRef[]> {
  return artifacts.listLatest();
}

/** One flow's versions and the one shown. */
export interface FlowVersionView {
  /** Oldest first. */
  readonly versions: readonly VersionListing[];
  /** The version asked for, else the latest. */
  readonly shown: VersionListing;
  /** The shown version's compiled flow (parsed IR JSON); undefined when its bytes are missing. */
  readonly compiled: unknown;
  /** The Markdown it was compiled from; undefined for a version deployed before sources were kept. */
  readonly source: string | undefined;
  /**
   * The shown version's diagram (SVG, as `svc flows show --format svg` prints it), or why it is not
   * drawn (its compiled flow missing or unreadable); the rest of the page is shown all the same.
   */
  readonly diagram: { readonly svg: string } | { readonly problem: string };
  /** The window the live numbers cover, in minutes; undefined when none are drawn (not the latest version, or not asked). */
  readonly numbersMinutes: number | undefined;
}

/** Live numbers for the latest version's diagram: from the rollups of this log, over `minutes`. */
export interface NumbersRequest {
  readonly events: EventLogStore;
  readonly minutes: number;
}

function diagramOf(hash: string, bytes: Buffer | undefined, numbers?: DiagramNumbers): FlowVersionView['diagram'] {
  try {
    return { svg: drawFlow(irOfArtifact(hash, bytes), 'svg', numbers) };
  } catch (err) {
    if (err instanceof IntegrityError) return { problem: err.message };
    throw err;
  }
}

/**
 * A flow's versions, and the source and compiled form of `version` (the latest when it is absent
 * or names no version of the flow).
 * @throws SvcError `SVC_ERR_NOT_FOUND` when the flow has no version.
 * @throws IntegrityError when the shown artifact no longer hashes to its address.
 */
export async function showFlowVersion(
  artifacts: ArtifactsStore,
  tenant: string,
  flow: string,
  version?: string,
  numbers?: NumbersRequest,
): Promise<FlowVersionView> {
  const versions = await artifacts.listVersions(tenant, flow);
  if (versions.length === 0) throw new SvcError('SVC_ERR_NOT_FOUND', `flow '${tenant}/${flow}' not found`);
  const latest = versions.find((v) => v.latest) ?? versions[0]!;
  const shown = versions.find((v) => v.version === version) ?? latest;
  const bytes = await artifacts.getArtifact(shown.hash);
  const source = await artifacts.getSource(tenant, flow, shown.version);
  const compiled: unknown = bytes === undefined ? undefined : JSON.parse(bytes.toString('utf8'));
  // The rollups count the flow, not a version: only the version that answers now carries them.
  const counted = shown.latest && numbers !== undefined ? numbers : undefined;
  const live = counted && (await flowNumbers(counted.events, tenant, flow, counted.minutes));
  return {
    versions,
    shown,
    compiled,
    source,
    diagram: diagramOf(shown.hash, bytes, live),
    numbersMinutes: counted?.minutes,
  };
}

/**
 * The deployed flows as an operator asks about them: every flow's latest version with the doors
 * beyond HTTP it answers (`svc flows list`), and one flow's versions, front matter and doors
 * (`svc flows show`). Read from verified artifacts through the flow loader.
 */
import { IntegrityError, SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';
import type { FlowIR } from '../../ir/types.js';
import type { ArtifactsStore, VersionListing } from '../../store/contracts/index.js';
import { frontMatterOf, type FrontMatterView } from './flow-front-matter.js';
import { irOfArtifact } from '../runtime/flow-loader.js';
import { scheduleProblem } from '../runtime/scheduler.js';

/** How a flow is reached: `/run`, `/enqueue`, the WSDL of its SOAP configuration, the gRPC door, a cron schedule. */
export type DoorName = 'http' | 'queue' | 'soap' | 'grpc' | 'cron';

export interface FlowDoor {
  readonly door: DoorName;
  /** Where or how, in one line: the route, the gRPC method, the schedule. */
  readonly detail: string;
}

/** One line of `svc flows list`: a flow's latest version and its markers. */
export interface FlowSummary {
  readonly tenant: string;
  readonly flow: string;
  readonly version: string;
  readonly hash: string;
  /** ISO 8601 UTC. */
  readonly created_at: string;
  /** Has `soap_operation` and `soap_namespace`: a WSDL is served (any flow's `/run` takes SOAP envelopes). */
  readonly soap: boolean;
  /** Declares `inbound: grpc`. */
  readonly grpc: boolean;
  /** The `schedule:` cron as written; null when there is none. */
  readonly schedule: string | null;
  /** Set when the artifact could not be read (the markers are then unknown and false/null). */
  readonly error?: string;
}

/** `svc flows show`: every version, and the front matter and doors of one of them. */
export interface FlowDetails {
  readonly tenant: string;
  readonly flow: string;
  /** Oldest first. */
  readonly versions: readonly VersionListing[];
  readonly shown: VersionListing & { readonly front_matter: FrontMatterView; readonly doors: readonly FlowDoor[] };
}

/** The doors a compiled flow answers once it is the latest version. */
export function doorsOf(ir: FlowIR): FlowDoor[] {
  const base = `/flows/${ir.tenant}/${ir.flow}`;
  const doors: FlowDoor[] = [
    { door: 'http', detail: `POST ${base}/run (JSON, XML, SOAP envelopes)` },
    { door: 'queue', detail: `POST ${base}/enqueue` },
  ];
  if (ir.soap !== undefined)
    doors.push({
      door: 'soap',
      detail: `WSDL at GET ${base}/wsdl, operation ${ir.soap.operation} in ${ir.soap.namespace}`,
    });
  if (ir.inbound === 'grpc') {
    const method = ir.grpcMethod ?? "the method named like the flow in the tenant's latest descriptors";
    doors.push({ door: 'grpc', detail: `${method} (when svc serve has --grpc-port)` });
  }
  if (ir.schedule !== undefined) {
    const problem = scheduleProblem(ir.schedule);
    doors.push({
      door: 'cron',
      detail:
        problem === undefined
          ? `"${ir.schedule.trim()}" UTC (schedules are read when svc serve starts)`
          : `not scheduled: ${problem}`,
    });
  }
  return doors;
}

/** Every flow's latest version, by tenant then flow; an unreadable artifact is listed with its error. */
export async function listFlows(artifacts: ArtifactsStore, tenant?: string): Promise<FlowSummary[]> {
  const out: FlowSummary[] = [];
  for (const ref of await artifacts.listLatest()) {
    if (tenant !== undefined && ref.tenant !== tenant) continue;
    const head = {
      tenant: ref.tenant,
      flow: ref.name,
      version: ref.version,
      hash: ref.hash,
      created_at: ref.created_at,
    };
    try {
      const ir = await artifactIr(artifacts, ref.hash);
      out.push({ ...head, soap: ir.soap !== undefined, grpc: ir.inbound === 'grpc', schedule: ir.schedule ?? null });
    } catch (err) {
      if (!(err instanceof IntegrityError)) throw err;
      out.push({ ...head, soap: false, grpc: false, schedule: null, error: err.message });
    }
  }
  return out;
}

/** The verified IR of an artifact. @throws IntegrityError when it is missing or unreadable */
async function artifactIr(artifacts: ArtifactsStore, hash: string): Promise<FlowIR> {
  return irOfArtifact(hash, await artifacts.getArtifact(hash));
}

/** A flow's versions, the one asked for (default: latest) and its verified IR. */
export interface ShownVersion {
  /** Oldest first. */
  readonly versions: readonly VersionListing[];
  readonly shown: VersionListing;
  readonly ir: FlowIR;
}

/**
 * A flow's versions and the verified IR of `version` (default: latest).
 * @throws SvcError SVC_ERR_INVALID_NAME for a name breaking the rule, SVC_ERR_NOT_FOUND for a flow
 *   with no version or an unknown version; IntegrityError for an unreadable artifact
 */
export async function shownVersion(
  artifacts: ArtifactsStore,
  tenant: string,
  flow: string,
  version?: string,
): Promise<ShownVersion> {
  for (const [what, value] of [
    ['tenant', tenant],
    ['flow', flow],
  ] as const) {
    const problem = describeNameProblem(what, value);
    if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
  }
  const versions = await artifacts.listVersions(tenant, flow);
  if (versions.length === 0)
    throw new SvcError('SVC_ERR_NOT_FOUND', `flow '${tenant}/${flow}' is not deployed; see svc flows list`);
  const shown =
    version === undefined
      ? (versions.find((v) => v.latest) ?? versions.at(-1)!)
      : versions.find((v) => v.version === version);
  if (shown === undefined) {
    throw new SvcError(
      'SVC_ERR_NOT_FOUND',
      `flow '${tenant}/${flow}' has no version "${version}"; its versions: ${versions.map((v) => v.version).join(', ')}`,
    );
  }
  return { versions, shown, ir: await artifactIr(artifacts, shown.hash) };
}

/**
 * A flow's versions and, for `version` (default: latest), its front matter and doors.
 * @throws as `shownVersion`
 */
export async function showFlow(
  artifacts: ArtifactsStore,
  tenant: string,
  flow: string,
  version?: string,
): Promise<FlowDetails> {
  const { versions, shown, ir } = await shownVersion(artifacts, tenant, flow, version);
  return { tenant, flow, versions, shown: { ...shown, front_matter: frontMatterOf(ir), doors: doorsOf(ir) } };
}

/**
 * `svc deploy`: publishes one or many `.flow.md` files under one version label, all or nothing.
 * Every file is read and compiled first, then the registry is checked for every flow (tenant
 * registered and active, version not yet published); only when no file is refused are they all
 * published, by one ArtifactsStore.publishMany (one transaction of whichever store, which checks again
 * under its lock), so a crash mid-way leaves none or all of them.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import { FlowPublicationError, type FlowWarning } from '../../flow/diagnostics.js';
import {
  DuplicateVersionError,
  type ArtifactsStore,
  type AuditStore,
  type PublishInput,
  type PublishRefusal,
} from '../../store/contracts/index.js';
import { compileForPublication, readLibraries, type CompiledFlow } from './publish.js';
import {
  ReplayDiffersError,
  replayAudit,
  replayBeforeDeploy,
  type DeployReplay,
  type FlowReplay,
} from './deploy-replay.js';
import type { ReplayCounts } from './replay.js';

export { ReplayDiffersError, type DeployReplay, type FlowReplay };

/** The files a directory argument stands for: its own `*.flow.md`, not its subfolders'. */
export const FLOW_FILE_SUFFIX = '.flow.md';

export interface DeployOptions {
  /** `.flow.md` files and directories, in the order given; a file named twice is deployed once. */
  readonly paths: readonly string[];
  /** The version label every flow is published under. */
  readonly version: string;
  /** Directory of `*.lib.md` files for `use:`, read once for every file. @default none */
  readonly libs?: string;
}

export interface DeployedFlow {
  /** The file as named on the command line (or joined to its directory). */
  readonly file: string;
  readonly flow: string;
  readonly tenant: string;
  readonly version: string;
  readonly hash: string;
  /** Publication warnings (the flow was published all the same); the caller shows them. */
  readonly warnings: readonly FlowWarning[];
  /** With a replay before the deploy: its verdict counts. */
  readonly replay?: ReplayCounts;
}

export interface DeployResult {
  /** The registry database, as an absolute path; on PostgreSQL the store URL without its password. */
  readonly db: string;
  /** True when the paths named one file and no directory: the spec's one-file form. */
  readonly singleFile: boolean;
  /** In the order of the paths, a directory's files sorted by name. */
  readonly deployed: readonly DeployedFlow[];
  /** With a replay before the deploy: each flow's, in the same order. */
  readonly replays?: readonly FlowReplay[];
}

/** One refused file and why, as the one-file deploy would have thrown it. */
export interface DeployRefusal {
  readonly file: string;
  /** FlowPublicationError (every diagnostic) or an SvcError (unreadable, tenant, version, same flow twice). */
  readonly error: FlowPublicationError | SvcError;
}

/** A deploy with at least one refused file: nothing was published. */
export class DeployRefusedError extends Error {
  constructor(
    /** Every refused file, in the order of the paths. */
    readonly refusals: readonly DeployRefusal[],
    /** How many files the paths named. */
    readonly fileCount: number,
    readonly singleFile: boolean,
  ) {
    super(`${refusals.length} of ${fileCount} file${fileCount === 1 ? '' : 's'} refused; nothing was published`);
    this.name = 'DeployRefusedError';
  }
}

/** Why a deploy was refused because of its tenant; the message names the repairing command. */
export class TenantNotReadyError extends SvcError {
  constructor(message: string) {
    super('SVC_ERR_TENANT_NOT_FOUND', message);
    this.name = 'TenantNotReadyError';
  }
}

/** Two files of one deploy name the same (tenant, flow): one version label cannot hold both. */
export class SameFlowTwiceError extends SvcError {
  constructor(tenant: string, flow: string, others: readonly string[]) {
    super(
      'SVC_ERR_CONFLICT',
      `flow ${tenant}/${flow} is also in ${others.join(', ')}; one deploy publishes each flow once`,
    );
    this.name = 'SameFlowTwiceError';
  }
}

/** The registry a deploy publishes to. */
export interface DeployTarget {
  readonly artifacts: ArtifactsStore;
  /** Where the registry is, for messages (DeployResult.db): the registry file, or the store URL without its password. */
  readonly location: string;
  /** Where each published flow's `flow.deployed` entry is chained (all in one transaction). @default not audited */
  readonly audit?: Pick<AuditStore, 'appendMany'>;
  /** Who deploys, for the audit entry. @default 'cli' */
  readonly actor?: string;
  /** Replay each flow's recorded deliveries against its new version first (`--replay-since`). */
  readonly replay?: DeployReplay;
}

interface Compiled {
  readonly file: string;
  readonly flow: CompiledFlow;
}

/**
 * Compiles and publishes every file the paths name under (tenant, flow, version), moving each
 * flow's `latest`, or publishes nothing. The registry checks (tenant registered and active, version
 * not yet published) run inside the store's publishMany, under its lock, so no concurrent publish or
 * tenant change slips between them and the writes.
 * @throws DeployRefusedError naming every refused file; SvcError for an empty version or an unreadable --libs
 */
export async function deployFlows(opts: DeployOptions, target: DeployTarget): Promise<DeployResult> {
  const plan = planDeploy(opts);
  const createdAt = isoNow();
  const inputs = plan.candidates.map(({ flow: c }) => publishInput(c, opts.version, createdAt));
  if (plan.refusals.size > 0) {
    // Nothing will be written: only read the registry, so every other refusal is named too.
    plan.addRefusals(registryRefusals(await target.artifacts.publishRefusals(inputs), plan.candidates, opts.version));
    return plan.refuse();
  }
  const gate = target.replay;
  // Only read until here: a replay that refuses leaves the registry as it was.
  const replays = gate === undefined ? undefined : await replayBeforeDeploy(plan.candidates, target.artifacts, gate);
  if (gate !== undefined && !gate.acceptDifferences && replays!.some((r) => r.counts.differs > 0))
    throw new ReplayDiffersError(replays!);
  plan.addRefusals(registryRefusals(await target.artifacts.publishMany(inputs), plan.candidates, opts.version));
  if (plan.refusals.size > 0) plan.refuse();
  const result = plan.result(target.location);
  const deployed = result.deployed.map((d, i) => (replays === undefined ? d : { ...d, replay: replays[i]!.counts }));
  // One transaction for every entry: a deploy of 400 flows is not 400 audit commits.
  await target.audit?.appendMany(
    deployed.map((d, i) => ({
      tenant: d.tenant,
      eventType: 'flow.deployed',
      payload: {
        flow: d.flow,
        version: d.version,
        hash: d.hash,
        actor: target.actor ?? 'cli',
        ...(replays === undefined || gate === undefined ? {} : { replay: replayAudit(replays[i]!, gate) }),
      },
    })),
  );
  return { ...result, deployed, ...(replays === undefined ? {} : { replays }) };
}

/** A deploy's files compiled and checked on their own, before the registry is read. */
interface DeployPlan {
  /** The files still to publish, in order. */
  readonly candidates: readonly Compiled[];
  /** Every refusal found so far, by file. */
  readonly refusals: ReadonlyMap<string, DeployRefusal['error']>;
  addRefusals(refusals: readonly DeployRefusal[]): void;
  /** @throws DeployRefusedError with every refusal, in the order of the paths */
  refuse(): never;
  result(db: string): DeployResult;
}

function planDeploy(opts: DeployOptions): DeployPlan {
  if (opts.version.trim() === '') throw new SvcError('SVC_ERR_INVALID_INPUT', 'the version (-v) must not be empty');
  const libraries = readLibraries(opts.libs);
  const listing = listFlowFiles(opts.paths);
  const refusals = new Map<string, DeployRefusal['error']>(listing.refusals.map((r) => [r.file, r.error]));
  const compiled: Compiled[] = [];
  for (const file of listing.files) {
    try {
      compiled.push({ file, flow: compileForPublication({ path: file, libraries }) });
    } catch (err) {
      if (!(err instanceof FlowPublicationError || err instanceof SvcError)) throw err;
      refusals.set(file, err);
    }
  }
  for (const r of sameFlowRefusals(compiled)) refusals.set(r.file, r.error);
  const candidates = compiled.filter((c) => !refusals.has(c.file));
  return {
    candidates,
    refusals,
    addRefusals: (more) => {
      for (const r of more) refusals.set(r.file, r.error);
    },
    refuse: () => {
      const order = [...listing.refusals.map((r) => r.file), ...listing.files];
      const all = order.flatMap((file) => (refusals.has(file) ? [{ file, error: refusals.get(file)! }] : []));
      throw new DeployRefusedError(all, listing.files.length + listing.refusals.length, listing.singleFile);
    },
    result: (db) => ({
      db,
      singleFile: listing.singleFile,
      deployed: candidates.map(({ file, flow: c }) => ({
        file,
        flow: c.ir.flow,
        tenant: c.ir.tenant,
        version: opts.version,
        hash: c.hash,
        warnings: c.warnings,
      })),
    }),
  };
}

function publishInput(c: CompiledFlow, version: string, createdAt: string): PublishInput {
  return { tenant: c.ir.tenant, name: c.ir.flow, version, bytes: c.bytes, hash: c.hash, createdAt, source: c.source };
}

export interface FlowFileListing {
  /** Files to compile, in the order of the paths, each directory's sorted by name; no file twice. */
  readonly files: readonly string[];
  /** Directories that cannot be read or hold no `*.flow.md` file. */
  readonly refusals: readonly DeployRefusal[];
  /** True when the paths named one file and no directory. */
  readonly singleFile: boolean;
}

/**
 * The files the paths name. A path that is not a directory is taken as a file, whatever its name
 * (a missing one is refused when it is read, with the one-file deploy's message). Subfolders are
 * not entered: a flow folder may hold other folders (libraries, fixtures, old copies), as with `svc dev`.
 */
export function listFlowFiles(paths: readonly string[]): FlowFileListing {
  const files: string[] = [];
  const refusals: DeployRefusal[] = [];
  const seen = new Set<string>();
  const add = (file: string) => {
    const key = resolve(file);
    if (seen.has(key)) return;
    seen.add(key);
    files.push(file);
  };
  let directories = 0;
  for (const path of paths) {
    if (!isDirectory(path)) {
      add(path);
      continue;
    }
    directories += 1;
    let names: string[];
    try {
      names = readdirSync(path, { withFileTypes: true })
        .filter((e) => !e.isDirectory() && e.name.endsWith(FLOW_FILE_SUFFIX))
        .map((e) => e.name)
        .sort();
    } catch (err) {
      refusals.push({
        file: path,
        error: new SvcError('SVC_ERR_INVALID_INPUT', `cannot read ${path}: ${(err as Error).message}`),
      });
      continue;
    }
    if (names.length === 0)
      refusals.push({
        file: path,
        error: new SvcError(
          'SVC_ERR_INVALID_INPUT',
          `no *${FLOW_FILE_SUFFIX} file in the directory ${path} (subfolders are not read)`,
        ),
      });
    for (const n of names) add(join(path, n));
  }
  return { files, refusals, singleFile: directories === 0 && paths.length === 1 };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Every file of a group naming the same (tenant, flow) is refused, each naming the others. */
function sameFlowRefusals(compiled: readonly Compiled[]): DeployRefusal[] {
  const byFlow = new Map<string, Compiled[]>();
  for (const c of compiled) {
    const key = `${c.flow.ir.tenant}/${c.flow.ir.flow}`;
    byFlow.set(key, [...(byFlow.get(key) ?? []), c]);
  }
  return [...byFlow.values()]
    .filter((group) => group.length > 1)
    .flatMap((group) =>
      group.map((c) => ({
        file: c.file,
        error: new SameFlowTwiceError(
          c.flow.ir.tenant,
          c.flow.ir.flow,
          group.filter((o) => o !== c).map((o) => o.file),
        ),
      })),
    );
}

/** The store's refusals as the one-file deploy words them, naming the repairing command. */
function registryRefusals(
  refusals: readonly PublishRefusal[],
  compiled: readonly Compiled[],
  version: string,
): DeployRefusal[] {
  return refusals.map(({ index, reason }) => {
    const { file, flow: c } = compiled[index]!;
    const { tenant, flow } = c.ir;
    switch (reason) {
      case 'tenant-not-registered':
        return {
          file,
          error: new TenantNotReadyError(
            `tenant "${tenant}" is not registered; register it first: svc tenant create --id ${tenant} --display-name <name>`,
          ),
        };
      case 'tenant-disabled':
        return {
          file,
          error: new TenantNotReadyError(
            `tenant "${tenant}" is disabled; enable it first: svc tenant enable --id ${tenant}`,
          ),
        };
      case 'version-exists':
        // The error ArtifactsStore.publish throws, found before any write so every such file is named.
        return { file, error: new DuplicateVersionError(tenant, flow, version) };
    }
  });
}

/** The verified flow loader the doors, workers and scheduler share: latest ref -> artifact -> IR, parsed once per hash. */
import { IntegrityError } from '../common/errors.js';
import { upgradeStoredIr, type FlowIRv1 } from '../flow/stored-ir.js';
import type { FlowIR } from '../ir/types.js';
import { ArtifactsRepo, type FlowVersionRef } from '../store/artifacts-repo.js';
import type { Db } from '../store/db.js';

export interface LoadedFlow {
  ir: FlowIR;
  version: string;
  hash: string;
  /** ISO 8601 UTC publication time of this version. */
  created_at: string;
}

/** Parsed IR by hash: artifacts are immutable, so a hash maps to the same IR forever. */
const irByHash = new Map<string, FlowIR>();
const IR_CACHE_MAX = 1000;

/** Loads and verifies an artifact's IR by hash (parsed once, cached). @throws IntegrityError on a hash mismatch or a missing artifact */
export function loadIr(repo: ArtifactsRepo, hash: string): FlowIR {
  const hit = irByHash.get(hash);
  if (hit) return hit;
  const bytes = repo.getArtifact(hash);
  if (!bytes) throw new IntegrityError(`artifact ${hash} is referenced but missing; re-deploy the flow under a new version`);
  let stored: FlowIR | FlowIRv1;
  try {
    stored = JSON.parse(bytes.toString('utf8')) as FlowIR | FlowIRv1;
  } catch (err) {
    throw new IntegrityError(`artifact ${hash} does not hold valid IR JSON: ${(err as Error).message}`);
  }
  const ir = upgradeStoredIr(stored, hash);
  if (irByHash.size >= IR_CACHE_MAX) irByHash.clear();
  irByHash.set(hash, ir);
  return ir;
}

/**
 * The latest version of a flow with its verified IR; undefined when the flow has no version.
 * The ref is read on every call (one indexed query) so a new deploy takes effect on the next request.
 * @throws IntegrityError when the stored artifact does not match its hash
 */
export function loadFlow(db: Db | ArtifactsRepo, tenant: string, name: string): LoadedFlow | undefined {
  const repo = db instanceof ArtifactsRepo ? db : repoFor(db);
  return loadRef(repo, repo.resolveLatest(tenant, name));
}

/** The flow a resolved ref points at (for callers that resolve `latest` through a cache). */
export function loadRef(repo: ArtifactsRepo, ref: FlowVersionRef | undefined): LoadedFlow | undefined {
  if (!ref) return undefined;
  return { ir: loadIr(repo, ref.hash), version: ref.version, hash: ref.hash, created_at: ref.created_at };
}

const repos = new WeakMap<Db, ArtifactsRepo>();
/** One repo (and its prepared statements) per open database. */
export function repoFor(db: Db): ArtifactsRepo {
  let r = repos.get(db);
  if (!r) repos.set(db, (r = new ArtifactsRepo(db)));
  return r;
}

/** Test hook: forget cached IR (e.g. after corrupting an artifact on purpose). */
export function clearIrCache(): void {
  irByHash.clear();
}

/** The verified flow loader every door, worker and the scheduler share: latest ref -> artifact -> IR, parsed once per hash. */
import { IntegrityError } from '../../common/errors.js';
import type { LoadedFlow } from '../../engine/index.js';
import { upgradeStoredIr, type FlowIRv1 } from '../../flow/stored-ir.js';
import type { FlowIR } from '../../ir/types.js';
import type { FlowVersionRef, LatestRef } from '../../store/contracts/index.js';

/**
 * What the loader reads, synchronously: the SQLite SqliteArtifactsStore, or the PostgreSQL registry's
 * copy in memory (PgRegistryMirror, which holds the bytes of every latest artifact).
 */
export interface ArtifactReads {
  getArtifact(hash: string): Buffer | undefined;
  listLatest(): LatestRef[];
  resolveLatest(tenant: string, name: string): FlowVersionRef | undefined;
  /** Runs `fn`'s reads on one snapshot (SQLite: one transaction; memory: as it is). */
  readSnapshot<T>(fn: () => T): T;
}

/** Parsed IR kept per loader, by hash. @default 1000 */
const IR_CACHE_MAX = 1000;

interface CachedIr {
  readonly ir: FlowIR;
  /** Read since the eviction hand last passed it (second chance). */
  used: boolean;
}

export class FlowLoader {
  readonly #repo: ArtifactReads;
  readonly #resolveLatest: (tenant: string, name: string) => FlowVersionRef | undefined;
  /**
   * Artifacts are immutable, so a hash maps to the same IR forever. Bounded, least recently used
   * out first (approximately: second chance); it was cleared whole when full, so traffic spread
   * over more flows than it holds parsed every artifact again and again.
   */
  readonly #irByHash = new Map<string, CachedIr>();
  readonly #irCacheMax: number;

  /**
   * @param resolveLatest where `latest` is looked up (the service passes its registry cache, which
   *   revalidates by the file's change counter). @default one indexed read of the repo per call
   */
  constructor(
    repo: ArtifactReads,
    resolveLatest?: (tenant: string, name: string) => FlowVersionRef | undefined,
    opts: { irCacheMax?: number } = {},
  ) {
    this.#repo = repo;
    this.#irCacheMax = opts.irCacheMax ?? IR_CACHE_MAX;
    this.#resolveLatest = resolveLatest ?? ((tenant, name) => repo.resolveLatest(tenant, name));
  }

  /**
   * The latest version of a flow with its verified IR; undefined when the flow has no version. The
   * ref is resolved on every call, so a new deploy takes effect on the next request.
   * @throws IntegrityError when the stored artifact is missing or does not match its hash
   */
  latest(tenant: string, name: string): LoadedFlow | undefined {
    const ref = this.#resolveLatest(tenant, name);
    if (ref === undefined) return undefined;
    return { ir: this.ir(ref.hash), version: ref.version, hash: ref.hash, created_at: ref.created_at };
  }

  /** Runs `fn`'s registry reads on one snapshot under one lock (the start-up scan). */
  inOneRead<T>(fn: () => T): T {
    return this.#repo.readSnapshot(fn);
  }

  /** Every flow's latest ref (the start-up scan). */
  latestRefs(): LatestRef[] {
    return this.#repo.listLatest();
  }

  /**
   * An artifact's IR by hash (verified and parsed once, then cached).
   * @throws IntegrityError on a hash mismatch or a missing artifact
   */
  ir(hash: string): FlowIR {
    const hit = this.#irByHash.get(hash);
    if (hit) {
      hit.used = true;
      return hit.ir;
    }
    const ir = this.#parse(hash);
    if (this.#irByHash.size >= this.#irCacheMax) this.#evictOne();
    this.#irByHash.set(hash, { ir, used: false });
    return ir;
  }

  /**
   * An artifact's IR for a look at every flow (the start-up scan): from the cache when there, else
   * verified and parsed, and kept only while the cache has free room: a scan never pushes out what
   * traffic uses, and at start (the cache empty) the first traffic of up to IR_CACHE_MAX flows
   * does not verify and parse them again (measured: a backlog spread over 1,000 flows, served
   * after a restart, parsed every one of them twice).
   * @throws IntegrityError on a hash mismatch or a missing artifact
   */
  peekIr(hash: string): FlowIR {
    const hit = this.#irByHash.get(hash);
    if (hit) return hit.ir;
    const ir = this.#parse(hash);
    if (this.#irByHash.size < this.#irCacheMax) this.#irByHash.set(hash, { ir, used: false });
    return ir;
  }

  /** Cached entries read since the hand last passed go to the back once; the first one not read goes. */
  #evictOne(): void {
    for (const [hash, entry] of this.#irByHash) {
      this.#irByHash.delete(hash);
      if (!entry.used) return;
      entry.used = false;
      this.#irByHash.set(hash, entry);
    }
  }

  #parse(hash: string): FlowIR {
    return irOfArtifact(hash, this.#repo.getArtifact(hash));
  }
}

/**
 * The IR held by an artifact's verified bytes (as ArtifactsStore.getArtifact returns them), upgraded
 * from an older stored form when needed.
 * @throws IntegrityError when the artifact is missing or does not hold IR JSON
 */
export function irOfArtifact(hash: string, bytes: Buffer | undefined): FlowIR {
  if (!bytes)
    throw new IntegrityError(`artifact ${hash} is referenced but missing; re-deploy the flow under a new version`);
  let stored: FlowIR | FlowIRv1;
  try {
    stored = JSON.parse(bytes.toString('utf8')) as FlowIR | FlowIRv1;
  } catch (err) {
    throw new IntegrityError(`artifact ${hash} does not hold valid IR JSON: ${(err as Error).message}`);
  }
  return upgradeStoredIr(stored, hash);
}

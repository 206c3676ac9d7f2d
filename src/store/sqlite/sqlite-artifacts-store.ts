/** Flow artifacts by content address, version refs per (tenant, name) and the `latest` pointer. */
import type { Db } from './db.js';
import {
  type FlowVersionRef,
  type LatestRef,
  type VersionListing,
  type PublishInput,
  DuplicateVersionError,
  type ArtifactsStore,
  verifiedArtifact,
  publishedBytes,
  publishRefusalReason,
  type PublishRefusal,
  type PublishTarget,
} from '../contracts/index.js';

/** The tenant's status as publishMany checks it, read without depending on the tenants store. */
export function tenantStatus(db: Db, id: string): 'active' | 'disabled' | undefined {
  const row = db
    .prepare<[string], { status: 'active' | 'disabled' }>('SELECT status FROM tenants WHERE id = ?')
    .get(id);
  return row?.status;
}

export class SqliteArtifactsStore implements ArtifactsStore {
  readonly #db: Db;
  readonly #latest;
  readonly #artifact;
  readonly #byVersion;
  readonly #versions;
  readonly #allLatest;

  constructor(db: Db) {
    this.#db = db;
    this.#latest = db.prepare<[string, string], FlowVersionRef>(
      `SELECT v.version, v.hash, v.created_at FROM flow_latest l
         JOIN flow_versions v ON v.tenant = l.tenant AND v.name = l.name AND v.version = l.version
        WHERE l.tenant = ? AND l.name = ?`,
    );
    this.#artifact = db.prepare<[string], { bytes: Buffer }>('SELECT bytes FROM artifacts WHERE hash = ?');
    this.#byVersion = db.prepare<[string, string, string], FlowVersionRef>(
      'SELECT version, hash, created_at FROM flow_versions WHERE tenant = ? AND name = ? AND version = ?',
    );
    this.#versions = db.prepare<[string, string], VersionListing>(
      `SELECT v.version, v.hash, v.created_at, (l.version IS NOT NULL) AS latest FROM flow_versions v
         LEFT JOIN flow_latest l ON l.tenant = v.tenant AND l.name = v.name AND l.version = v.version
        WHERE v.tenant = ? AND v.name = ? ORDER BY v.created_at, v.rowid`,
    );
    this.#allLatest = db.prepare<[], LatestRef>(
      `SELECT l.tenant, l.name, v.version, v.hash, v.created_at FROM flow_latest l
         JOIN flow_versions v ON v.tenant = l.tenant AND v.name = l.name AND v.version = l.version
        ORDER BY l.tenant, l.name`,
    );
  }

  /** The version `latest` points at, in one indexed query. */
  resolveLatest(tenant: string, name: string): FlowVersionRef | undefined {
    return this.#latest.get(tenant, name);
  }

  getByVersion(tenant: string, name: string, version: string): FlowVersionRef | undefined {
    return this.#byVersion.get(tenant, name, version);
  }

  /** Every version of a flow, oldest first; none is ever deleted. */
  listVersions(tenant: string, name: string): VersionListing[] {
    return this.#versions.all(tenant, name).map((r) => ({ ...r, latest: Boolean(r.latest) }));
  }

  /** The Markdown a version was deployed from; undefined for a version deployed before sources were kept. */
  getSource(tenant: string, name: string, version: string): string | undefined {
    const row = this.#db
      .prepare('SELECT source FROM flow_sources WHERE tenant = ? AND name = ? AND version = ?')
      .get(tenant, name, version) as { source: string } | undefined;
    return row?.source;
  }

  /** The latest version of every flow (start-up scans: schedules, config check, cert reconcile). */
  listLatest(): LatestRef[] {
    return this.#allLatest.all();
  }

  /**
   * The artifact's bytes, verified against their address.
   * @returns undefined when no artifact has that hash
   * @throws IntegrityError when the stored bytes no longer hash to `hash`
   */
  getArtifact(hash: string): Buffer | undefined {
    const row = this.#artifact.get(hash);
    return row === undefined ? undefined : verifiedArtifact(hash, row.bytes);
  }

  /**
   * Runs `fn` (reads only) inside one deferred transaction: its reads share one snapshot and one
   * shared lock, instead of each statement taking and dropping the lock and checking for a hot
   * journal (the start-up scan of every latest artifact).
   */
  readSnapshot<T>(fn: () => T): T {
    return this.#db.transaction(fn).deferred();
  }

  /**
   * Publishes every input or none in one IMMEDIATE transaction: the checks run under the registry's
   * write lock, so no other process can publish the same version or disable the tenant between
   * them and the writes; each publish() inside it is a savepoint, and a throw rolls all back.
   */
  publishMany(inputs: readonly PublishInput[]): PublishRefusal[] {
    return this.#db
      .transaction(() => {
        const refusals = this.#refusals(inputs);
        if (refusals.length === 0) for (const p of inputs) this.publish(p);
        return refusals;
      })
      .immediate();
  }

  /** publishMany's checks, read in one deferred transaction (one snapshot, no write lock). */
  publishRefusals(flows: readonly PublishTarget[]): PublishRefusal[] {
    return this.#db.transaction(() => this.#refusals(flows)).deferred();
  }

  #refusals(flows: readonly PublishTarget[]): PublishRefusal[] {
    return flows.flatMap((f, index) => {
      const reason = publishRefusalReason(
        tenantStatus(this.#db, f.tenant),
        this.#byVersion.get(f.tenant, f.name, f.version) !== undefined,
      );
      return reason === undefined ? [] : [{ index, reason }];
    });
  }

  /** Stores the artifact (deduplicated by hash), adds the version and moves `latest`, in one transaction. */
  publish(p: PublishInput): void {
    const bytes = publishedBytes(p);
    this.#db
      .transaction(() => {
        if (this.#byVersion.get(p.tenant, p.name, p.version))
          throw new DuplicateVersionError(p.tenant, p.name, p.version);
        this.#db
          .prepare('INSERT OR IGNORE INTO artifacts (hash, bytes, created_at) VALUES (?, ?, ?)')
          .run(p.hash, bytes, p.createdAt);
        this.#db
          .prepare('INSERT INTO flow_versions (tenant, name, version, hash, created_at) VALUES (?, ?, ?, ?, ?)')
          .run(p.tenant, p.name, p.version, p.hash, p.createdAt);
        if (p.source !== undefined)
          this.#db
            .prepare('INSERT INTO flow_sources (tenant, name, version, source) VALUES (?, ?, ?, ?)')
            .run(p.tenant, p.name, p.version, p.source);
        this.#db
          .prepare(
            'INSERT INTO flow_latest (tenant, name, version) VALUES (?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version',
          )
          .run(p.tenant, p.name, p.version);
      })
      .immediate();
  }
}

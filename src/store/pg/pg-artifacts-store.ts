/** Flow artifacts by content address, version refs and `latest`, in the PostgreSQL store. */
import type { PgDb, PgTx } from './pg-db.js';
import {
  DuplicateVersionError,
  publishedBytes,
  verifiedArtifact,
  type ArtifactsStore,
  type FlowVersionRef,
  type LatestRef,
  type PublishInput,
  type VersionListing,
  isUniqueViolation,
  publishRefusalReason,
  type PublishRefusal,
  type PublishTarget,
} from '../contracts/index.js';

export class PgArtifactsStore implements ArtifactsStore {
  constructor(private readonly db: PgDb) {}

  async resolveLatest(tenant: string, name: string): Promise<FlowVersionRef | undefined> {
    const r = await this.db.query<FlowVersionRef>(
      `SELECT v.version, v.hash, v.created_at FROM flow_latest l
         JOIN flow_versions v ON v.tenant = l.tenant AND v.name = l.name AND v.version = l.version
        WHERE l.tenant = $1 AND l.name = $2`,
      [tenant, name],
    );
    return r.rows[0];
  }

  async getByVersion(tenant: string, name: string, version: string): Promise<FlowVersionRef | undefined> {
    return (
      await this.db.query<FlowVersionRef>(
        'SELECT version, hash, created_at FROM flow_versions WHERE tenant = $1 AND name = $2 AND version = $3',
        [tenant, name, version],
      )
    ).rows[0];
  }

  async listVersions(tenant: string, name: string): Promise<VersionListing[]> {
    const r = await this.db.query<VersionListing>(
      `SELECT v.version, v.hash, v.created_at, (l.version IS NOT NULL) AS latest FROM flow_versions v
         LEFT JOIN flow_latest l ON l.tenant = v.tenant AND l.name = v.name AND l.version = v.version
        WHERE v.tenant = $1 AND v.name = $2 ORDER BY v.created_at COLLATE "C", v.seq`,
      [tenant, name],
    );
    return r.rows;
  }

  async getSource(tenant: string, name: string, version: string): Promise<string | undefined> {
    return (
      await this.db.query<{ source: string }>(
        'SELECT source FROM flow_sources WHERE tenant = $1 AND name = $2 AND version = $3',
        [tenant, name, version],
      )
    ).rows[0]?.source;
  }

  async listLatest(): Promise<LatestRef[]> {
    const r = await this.db.query<LatestRef>(
      `SELECT l.tenant, l.name, v.version, v.hash, v.created_at FROM flow_latest l
         JOIN flow_versions v ON v.tenant = l.tenant AND v.name = l.name AND v.version = l.version
        ORDER BY l.tenant COLLATE "C", l.name COLLATE "C"`,
    );
    return r.rows;
  }

  async getArtifact(hash: string): Promise<Buffer | undefined> {
    const row = (await this.db.query<{ bytes: Buffer }>('SELECT bytes FROM artifacts WHERE hash = $1', [hash])).rows[0];
    return row === undefined ? undefined : verifiedArtifact(hash, row.bytes);
  }

  async publish(p: PublishInput): Promise<void> {
    const bytes = publishedBytes(p);
    await this.db.transaction((tx) => publishIn(tx, p, bytes));
  }

  /** Every input or none, in one transaction that first locks what it checks (see refusalsIn). */
  async publishMany(inputs: readonly PublishInput[]): Promise<PublishRefusal[]> {
    const bytes = inputs.map(publishedBytes);
    try {
      return await this.db.transaction(async (tx) => {
        const refusals = await refusalsIn(tx, inputs, true);
        if (refusals.length > 0) return refusals;
        for (const [index, p] of inputs.entries()) {
          try {
            await publishIn(tx, p, bytes[index]!);
          } catch (err) {
            // Published meanwhile without the deploy lock (a one-flow publish): refused like any other duplicate, and rolled back.
            if (!(err instanceof DuplicateVersionError)) throw err;
            throw new PublishRefused([{ index, reason: 'version-exists' }]);
          }
        }
        return [];
      });
    } catch (err) {
      if (err instanceof PublishRefused) return err.refusals;
      throw err;
    }
  }

  async publishRefusals(flows: readonly PublishTarget[]): Promise<PublishRefusal[]> {
    return this.db.readSnapshot((tx) => refusalsIn(tx, flows, false));
  }
}

/** The writes of one publish, inside the caller's transaction (publishMany runs several in one). */
async function publishIn(tx: PgTx, p: PublishInput, bytes: Buffer): Promise<void> {
  await tx.query('INSERT INTO artifacts (hash, bytes, created_at) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING', [
    p.hash,
    bytes,
    p.createdAt,
  ]);
  try {
    await tx.query('INSERT INTO flow_versions (tenant, name, version, hash, created_at) VALUES ($1, $2, $3, $4, $5)', [
      p.tenant,
      p.name,
      p.version,
      p.hash,
      p.createdAt,
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) throw new DuplicateVersionError(p.tenant, p.name, p.version);
    throw err;
  }
  if (p.source !== undefined)
    await tx.query('INSERT INTO flow_sources (tenant, name, version, source) VALUES ($1, $2, $3, $4)', [
      p.tenant,
      p.name,
      p.version,
      p.source,
    ]);
  await tx.query(
    'INSERT INTO flow_latest (tenant, name, version) VALUES ($1, $2, $3) ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version',
    [p.tenant, p.name, p.version],
  );
}

/** The class of the transaction-level advisory lock a many-flow publish holds on the schema's registry. */
const DEPLOY_LOCK_CLASS = 0x5356_4450; // 'SVDP'

/** A publishMany refused inside its transaction: thrown to roll it back, caught outside it. */
class PublishRefused extends Error {
  constructor(readonly refusals: PublishRefusal[]) {
    super('publish refused');
  }
}

/**
 * publishMany's checks of `flows`, read in the caller's transaction. With `lock`, it first takes
 * the deploy lock of the schema (another many-flow publish waits for this one's COMMIT, so two
 * cannot both find a version free) and share-locks the tenant rows (a disable waits too): what is
 * read stays true until the publishes commit.
 */
async function refusalsIn(tx: PgTx, flows: readonly PublishTarget[], lock: boolean): Promise<PublishRefusal[]> {
  if (lock) await tx.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [DEPLOY_LOCK_CLASS]);
  const tenants = [...new Set(flows.map((f) => f.tenant))];
  const names = [...new Set(flows.map((f) => f.name))];
  const versions = [...new Set(flows.map((f) => f.version))];
  const statuses = await tx.query<{ id: string; status: 'active' | 'disabled' }>(
    `SELECT id, status FROM tenants WHERE id = ANY($1::text[]) ORDER BY id${lock ? ' FOR SHARE' : ''}`,
    [tenants],
  );
  const existing = await tx.query<{ tenant: string; name: string; version: string }>(
    'SELECT tenant, name, version FROM flow_versions WHERE version = ANY($1::text[]) AND tenant = ANY($2::text[]) AND name = ANY($3::text[])',
    [versions, tenants, names],
  );
  const status = new Map(statuses.rows.map((r) => [r.id, r.status]));
  const published = new Set(existing.rows.map((r) => JSON.stringify([r.tenant, r.name, r.version])));
  return flows.flatMap((f, index) => {
    const reason = publishRefusalReason(
      status.get(f.tenant),
      published.has(JSON.stringify([f.tenant, f.name, f.version])),
    );
    return reason === undefined ? [] : [{ index, reason }];
  });
}

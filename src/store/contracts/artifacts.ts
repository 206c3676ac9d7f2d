/** The artifacts contract: flow versions, the `latest` pointer, publishing one or many flows, and the checks on artifact bytes. */
import { sha256Hex } from '../../common/digest.js';
import { IntegrityError, SvcError } from '../../common/errors.js';
import type { Awaitable } from '../../common/awaitable.js';

export interface FlowVersionRef {
  version: string;
  hash: string;
  /** ISO 8601 UTC. */
  created_at: string;
}

export interface LatestRef extends FlowVersionRef {
  tenant: string;
  name: string;
}

export interface VersionListing extends FlowVersionRef {
  /** True for the version `latest` points at. */
  latest: boolean;
}

export interface PublishInput {
  tenant: string;
  name: string;
  version: string;
  /** The artifact bytes (canonical IR JSON). */
  bytes: string | Uint8Array;
  /** Hex SHA-256 of bytes; checked before anything is written. */
  hash: string;
  /** ISO 8601 UTC. */
  createdAt: string;
  /** The Markdown the version was compiled from, kept beside it. @default not kept */
  source?: string;
}

/** A version that already exists for (tenant, name): publishing it again changes nothing. */
export class DuplicateVersionError extends SvcError {
  constructor(tenant: string, name: string, version: string) {
    super(
      'SVC_ERR_CONFLICT',
      `flow ${tenant}/${name} already has version "${version}"; versions are never replaced, deploy under a new version`,
    );
    this.name = 'DuplicateVersionError';
  }
}

/** What a publish is checked by: the flow and the version it would add. */
export type PublishTarget = Pick<PublishInput, 'tenant' | 'name' | 'version'>;

/**
 * Why a flow cannot be published, from the first check it fails: its tenant is not registered, or
 * is disabled, or the flow already holds the version.
 */
export type PublishRefusalReason = 'tenant-not-registered' | 'tenant-disabled' | 'version-exists';

/** One refused flow of a publishMany, by its index in the inputs. */
export interface PublishRefusal {
  readonly index: number;
  readonly reason: PublishRefusalReason;
}

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface ArtifactsStore {
  resolveLatest(tenant: string, name: string): Awaitable<FlowVersionRef | undefined>;
  getByVersion(tenant: string, name: string, version: string): Awaitable<FlowVersionRef | undefined>;
  /** Every version of a flow, oldest first. */
  listVersions(tenant: string, name: string): Awaitable<VersionListing[]>;
  getSource(tenant: string, name: string, version: string): Awaitable<string | undefined>;
  /** The latest version of every flow, by tenant and name. */
  listLatest(): Awaitable<LatestRef[]>;
  /** Verified bytes. @throws IntegrityError when they no longer hash to `hash`. */
  getArtifact(hash: string): Awaitable<Buffer | undefined>;
  /**
   * Stores the artifact, adds the version and moves `latest`, all in one transaction.
   * @throws DuplicateVersionError when the version exists; IntegrityError when the bytes do not hash to `hash`
   */
  publish(p: PublishInput): Awaitable<void>;
  /**
   * Publishes every input or none (a deploy of many flows), atomic by itself: one transaction
   * checks each flow (tenant registered and active, version not yet published) and holds what it
   * checked until it commits, so a concurrent publish or tenant change finds all of them published
   * or none. Each published flow is stored and moves its `latest` as publish() does.
   * @returns [] when every input was published; otherwise every refusal, in input order, and nothing was written
   * @throws IntegrityError when bytes do not hash to their `hash`; a database failure (nothing written)
   */
  publishMany(inputs: readonly PublishInput[]): Awaitable<PublishRefusal[]>;
  /**
   * The refusals publishMany would give these flows now, only read (nothing is locked or written):
   * a deploy refused for other reasons still names every flow the registry would refuse.
   */
  publishRefusals(flows: readonly PublishTarget[]): Awaitable<PublishRefusal[]>;
}

/** Stored bytes checked against their address. @throws IntegrityError when they no longer hash to it */
export function verifiedArtifact(hash: string, bytes: Buffer): Buffer {
  const actual = sha256Hex(bytes);
  if (actual !== hash)
    throw new IntegrityError(
      `artifact ${hash} is corrupt: its bytes hash to ${actual}; re-deploy the flow under a new version`,
    );
  return bytes;
}

/** The bytes a publish stores, checked against the hash it names before anything is written. */
export function publishedBytes(p: PublishInput): Buffer {
  const bytes = typeof p.bytes === 'string' ? Buffer.from(p.bytes, 'utf8') : Buffer.from(p.bytes);
  if (sha256Hex(bytes) !== p.hash)
    throw new IntegrityError(
      `refusing to publish ${p.tenant}/${p.name} ${p.version}: the bytes do not hash to ${p.hash}`,
    );
  return bytes;
}

/** A flow's refusal from its tenant's status and whether it holds the version, in the order the checks run. */
export function publishRefusalReason(
  status: 'active' | 'disabled' | undefined,
  hasVersion: boolean,
): PublishRefusalReason | undefined {
  if (status === undefined) return 'tenant-not-registered';
  if (status === 'disabled') return 'tenant-disabled';
  return hasVersion ? 'version-exists' : undefined;
}

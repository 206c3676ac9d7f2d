/** The protobuf descriptors contract: versions, the latest pointer, the gRPC door's synchronous reads. */
import { SvcError } from '../../common/errors.js';
import type { Awaitable } from '../../common/awaitable.js';

/** One published descriptor version, without its bytes. */
export interface DescriptorInfo {
  readonly tenant: string;
  readonly name: string;
  readonly version: string;
  /** Hex SHA-256 of the FileDescriptorSet bytes. */
  readonly hash: string;
  readonly sizeBytes: number;
  /** ISO 8601 UTC instant. */
  readonly deployedAt: string;
  /** True when this version is the `latest` of its (tenant, name). */
  readonly latest: boolean;
}

/** A descriptor version with its FileDescriptorSet bytes. */
export interface StoredDescriptor extends DescriptorInfo {
  readonly bytes: Buffer;
}

export interface NewDescriptor {
  readonly tenant: string;
  readonly name: string;
  readonly version: string;
  readonly hash: string;
  readonly bytes: Buffer;
  readonly deployedAt: string;
  /** Move the latest pointer to this version. */
  readonly makeLatest: boolean;
}

/** A descriptor row as both stores return it; `latest` is 0/1 from SQLite, a boolean from PostgreSQL. */
export interface DescriptorRecord {
  tenant: string;
  name: string;
  version: string;
  hash: string;
  size_bytes: number;
  deployed_at: string;
  latest: number | boolean;
  bytes?: Buffer;
}

/** The selected columns, over DESCRIPTOR_FROM (d, l) or the latest-pointer join. */
export const DESCRIPTOR_COLUMNS = `d.tenant, d.name, d.version, d.hash, d.size_bytes, d.deployed_at,
  (l.version IS NOT NULL) AS latest`;
/** Every version with its latest pointer, if it is the latest. */
export const DESCRIPTOR_FROM = `proto_descriptors d LEFT JOIN proto_latest l
  ON l.tenant = d.tenant AND l.name = d.name AND l.version = d.version`;

/** Only the versions a latest pointer names. */
export const DESCRIPTOR_LATEST_FROM =
  'proto_latest l JOIN proto_descriptors d ON d.tenant = l.tenant AND d.name = l.name AND d.version = l.version';

/**
 * What the gRPC door reads on every call, synchronously: this repository over SQLite (the file's
 * change counter as its token), or PgRegistryMirror's copy over PostgreSQL (the change log's position).
 */
export interface DescriptorReads {
  /** The latest version of every descriptor name of a tenant, newest deployment first. */
  latestOfTenant(tenant: string): StoredDescriptor[];
  /** Changes whenever a descriptor, a latest pointer, or the registry may have changed. */
  changeToken(): string;
}

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface DescriptorsStore {
  tenantStatus(tenant: string): Awaitable<'active' | 'disabled' | undefined>;
  /** @throws SvcError `SVC_ERR_CONFLICT` when the version exists (nothing changes). */
  insert(d: NewDescriptor): Awaitable<void>;
  latestVersion(tenant: string, name: string): Awaitable<string | undefined>;
  list(tenant: string): Awaitable<DescriptorInfo[]>;
  get(tenant: string, name: string, version?: string): Awaitable<StoredDescriptor | undefined>;
  latestOfTenant(tenant: string): Awaitable<StoredDescriptor[]>;
}

/** The refusal of a version that is published already. */
export function descriptorExists(d: NewDescriptor): SvcError {
  return new SvcError(
    'SVC_ERR_CONFLICT',
    `descriptor ${d.tenant}/${d.name} version ${d.version} is already published; publish under a new version`,
  );
}

export function toDescriptorInfo(r: DescriptorRecord): DescriptorInfo {
  return {
    tenant: r.tenant,
    name: r.name,
    version: r.version,
    hash: r.hash,
    sizeBytes: r.size_bytes,
    deployedAt: r.deployed_at,
    latest: r.latest === 1 || r.latest === true,
  };
}

export function toStoredDescriptor(r: DescriptorRecord): StoredDescriptor {
  return { ...toDescriptorInfo(r), bytes: r.bytes as Buffer };
}

/** Protobuf descriptors in the registry database: versions per (tenant, name), a latest pointer, tenant status. */
import { SvcError } from '../../common/errors.js';
import { changeCounterOf, type ChangeCounter } from './change-counter.js';
import type { Db } from './db.js';
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

/** The storage contract (store/contracts.ts): implemented here and in store/pg/. */
export interface DescriptorsStore {
  tenantStatus(tenant: string): Awaitable<'active' | 'disabled' | undefined>;
  /** @throws SvcError `SVC_ERR_CONFLICT` when the version exists (nothing changes). */
  insert(d: NewDescriptor): Awaitable<void>;
  latestVersion(tenant: string, name: string): Awaitable<string | undefined>;
  list(tenant: string): Awaitable<DescriptorInfo[]>;
  get(tenant: string, name: string, version?: string): Awaitable<StoredDescriptor | undefined>;
  latestOfTenant(tenant: string): Awaitable<StoredDescriptor[]>;
}

export class SqliteDescriptorsStore implements DescriptorsStore {
  readonly #db: Db;
  /** Opened by the first changeToken() (the gRPC door's); tools never ask. */
  #changes: ChangeCounter | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The tenant's registration status, read from the `tenants` table; undefined when not registered. */
  tenantStatus(tenant: string): 'active' | 'disabled' | undefined {
    const row = this.#db.prepare('SELECT status FROM tenants WHERE id = ?').get(tenant) as
      { status: string } | undefined;
    if (row === undefined) return undefined;
    return row.status === 'active' ? 'active' : 'disabled';
  }

  /**
   * Publishes a version; with `makeLatest` also moves the latest pointer, in one transaction.
   * A version that exists already is refused (SVC_ERR_CONFLICT) and nothing changes.
   */
  insert(d: NewDescriptor): void {
    this.#db
      .transaction(() => {
        const exists = this.#db
          .prepare('SELECT hash FROM proto_descriptors WHERE tenant = ? AND name = ? AND version = ?')
          .get(d.tenant, d.name, d.version);
        if (exists !== undefined) {
          throw descriptorExists(d);
        }
        this.#db
          .prepare(
            'INSERT INTO proto_descriptors (tenant, name, version, hash, size_bytes, bytes, deployed_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          )
          .run(d.tenant, d.name, d.version, d.hash, d.bytes.length, d.bytes, d.deployedAt);
        if (d.makeLatest) {
          this.#db
            .prepare(
              'INSERT INTO proto_latest (tenant, name, version) VALUES (?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version',
            )
            .run(d.tenant, d.name, d.version);
        }
      })
      .immediate();
  }

  /** The latest version of (tenant, name), or undefined when none has been marked latest. */
  latestVersion(tenant: string, name: string): string | undefined {
    const row = this.#db.prepare('SELECT version FROM proto_latest WHERE tenant = ? AND name = ?').get(tenant, name) as
      { version: string } | undefined;
    return row?.version;
  }

  /** Every version of a tenant, by name then deployment time. */
  list(tenant: string): DescriptorInfo[] {
    const rows = this.#db
      .prepare(
        `SELECT ${DESCRIPTOR_COLUMNS} FROM ${DESCRIPTOR_FROM} WHERE d.tenant = ? ORDER BY d.name, d.deployed_at, d.version`,
      )
      .all(tenant) as DescriptorRecord[];
    return rows.map(toDescriptorInfo);
  }

  /** One version with its bytes; without `version`, the latest one. Undefined when absent. */
  get(tenant: string, name: string, version?: string): StoredDescriptor | undefined {
    const row = (
      version === undefined
        ? this.#db
            .prepare(
              `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_LATEST_FROM} WHERE l.tenant = ? AND l.name = ?`,
            )
            .get(tenant, name)
        : this.#db
            .prepare(
              `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_FROM} WHERE d.tenant = ? AND d.name = ? AND d.version = ?`,
            )
            .get(tenant, name, version)
    ) as DescriptorRecord | undefined;
    return row === undefined ? undefined : toStoredDescriptor(row);
  }

  /** The latest version of every descriptor name of a tenant, newest deployment first. */
  latestOfTenant(tenant: string): StoredDescriptor[] {
    const rows = this.#db
      .prepare(
        `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_LATEST_FROM} WHERE l.tenant = ? ORDER BY d.deployed_at DESC, d.name`,
      )
      .all(tenant) as DescriptorRecord[];
    return rows.map(toStoredDescriptor);
  }

  /**
   * A token that changes whenever the registry database may have changed, by any connection this
   * one included: the file's change counter (change-counter.ts, the same one the registry cache
   * reads). One pread, so the gRPC door can check it on every call.
   */
  changeToken(): string {
    this.#changes ??= changeCounterOf(this.#db);
    return String(this.#changes.read());
  }

  /** Releases the change counter's file handle, if changeToken() opened it (the database is the caller's). */
  close(): void {
    this.#changes?.close();
    this.#changes = undefined;
  }
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

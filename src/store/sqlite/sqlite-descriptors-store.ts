/** Protobuf descriptors in the registry database: versions per (tenant, name), a latest pointer, tenant status. */
import { changeCounterOf, type ChangeCounter } from './change-counter.js';
import type { Db } from './db.js';
import {
  type DescriptorInfo,
  type StoredDescriptor,
  type NewDescriptor,
  type DescriptorRecord,
  DESCRIPTOR_COLUMNS,
  DESCRIPTOR_FROM,
  DESCRIPTOR_LATEST_FROM,
  type DescriptorsStore,
  descriptorExists,
  toDescriptorInfo,
  toStoredDescriptor,
} from '../contracts/index.js';

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

/** Protobuf descriptors in the PostgreSQL store (the contract and the row shape: store/contracts/descriptors.ts). */
import type { PgDb } from './pg-db.js';
import {
  DESCRIPTOR_COLUMNS,
  DESCRIPTOR_FROM,
  DESCRIPTOR_LATEST_FROM,
  descriptorExists,
  toDescriptorInfo,
  toStoredDescriptor,
  type DescriptorInfo,
  type DescriptorRecord,
  type DescriptorsStore,
  type NewDescriptor,
  type StoredDescriptor,
} from '../contracts/index.js';

export class PgDescriptorsStore implements DescriptorsStore {
  constructor(private readonly db: PgDb) {}

  async tenantStatus(tenant: string): Promise<'active' | 'disabled' | undefined> {
    const row = (await this.db.query<{ status: string }>('SELECT status FROM tenants WHERE id = $1', [tenant])).rows[0];
    if (row === undefined) return undefined;
    return row.status === 'active' ? 'active' : 'disabled';
  }

  async insert(d: NewDescriptor): Promise<void> {
    await this.db.transaction(async (tx) => {
      // The primary key decides: a racing insert of the same version waits for the other's commit,
      // then inserts nothing and is refused; the latest pointer is moved only by the one that won.
      const r = await tx.query(
        'INSERT INTO proto_descriptors (tenant, name, version, hash, size_bytes, bytes, deployed_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant, name, version) DO NOTHING',
        [d.tenant, d.name, d.version, d.hash, d.bytes.length, d.bytes, d.deployedAt],
      );
      if ((r.rowCount ?? 0) === 0) throw descriptorExists(d);
      if (d.makeLatest) {
        await tx.query(
          'INSERT INTO proto_latest (tenant, name, version) VALUES ($1, $2, $3) ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version',
          [d.tenant, d.name, d.version],
        );
      }
    });
  }

  async latestVersion(tenant: string, name: string): Promise<string | undefined> {
    return (
      await this.db.query<{ version: string }>('SELECT version FROM proto_latest WHERE tenant = $1 AND name = $2', [
        tenant,
        name,
      ])
    ).rows[0]?.version;
  }

  async list(tenant: string): Promise<DescriptorInfo[]> {
    const r = await this.db.query<DescriptorRecord>(
      `SELECT ${DESCRIPTOR_COLUMNS} FROM ${DESCRIPTOR_FROM} WHERE d.tenant = $1 ORDER BY d.name COLLATE "C", d.deployed_at COLLATE "C", d.version COLLATE "C"`,
      [tenant],
    );
    return r.rows.map(toDescriptorInfo);
  }

  async get(tenant: string, name: string, version?: string): Promise<StoredDescriptor | undefined> {
    const r =
      version === undefined
        ? await this.db.query<DescriptorRecord>(
            `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_LATEST_FROM} WHERE l.tenant = $1 AND l.name = $2`,
            [tenant, name],
          )
        : await this.db.query<DescriptorRecord>(
            `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_FROM} WHERE d.tenant = $1 AND d.name = $2 AND d.version = $3`,
            [tenant, name, version],
          );
    return r.rows[0] === undefined ? undefined : toStoredDescriptor(r.rows[0]);
  }

  async latestOfTenant(tenant: string): Promise<StoredDescriptor[]> {
    const r = await this.db.query<DescriptorRecord>(
      `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_LATEST_FROM} WHERE l.tenant = $1 ORDER BY d.deployed_at COLLATE "C" DESC, d.name COLLATE "C"`,
      [tenant],
    );
    return r.rows.map(toStoredDescriptor);
  }
}

/**
 * In-process seeding for the scale benchmark: tenants, API keys and deployed flows written through
 * the project's own app/ use cases and store repos (the same code `svc tenant create`, `svc keys
 * create` and `svc deploy` run), but in one transaction per database instead of one process and
 * one fsync per item, so 100,000 keys or 30,000 flow versions take seconds, not hours.
 */
import { isoNow } from '../../src/common/clock.js';
import { sha256Hex } from '../../src/common/digest.js';
import { statePaths } from '../../src/common/paths.js';
import { createApiKey } from '../../src/app/use-cases/keys.js';
import { createTenant } from '../../src/app/use-cases/tenants.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { SqliteArtifactsStore } from '../../src/store/sqlite/sqlite-artifacts-store.js';
import { SqliteAuditStore } from '../../src/store/sqlite/sqlite-audit-store.js';
import { SqliteKeysStore } from '../../src/store/sqlite/sqlite-keys-store.js';
import { SqliteTenantAdmin } from '../../src/store/sqlite/sqlite-tenant-admin-store.js';
import { SqliteTenantsStore } from '../../src/store/sqlite/sqlite-tenants-store.js';
import { auditMigrations } from '../../src/store/sqlite/migrations/audit.js';
import { registryMigrations } from '../../src/store/sqlite/migrations/registry.js';
import { compileFlow, irToJson } from '../../src/flow/compile.js';
import type { FlowIR } from '../../src/ir/types.js';
import { QUOTE_FLOW } from '../quote-flow.js';

/** The bench flow under another name and tenant (the front matter rewritten, nothing else). */
export function quoteFlowSource(tenant: string, flow: string, revision = 0): string {
  return QUOTE_FLOW.replace('flow: quote', `flow: ${flow}`)
    .replace('tenant: bench', `tenant: ${tenant}`)
    .replace('id is required', revision === 0 ? 'id is required' : `id is required (revision ${revision})`);
}

/** The stores seeding writes through (the repos `svc tenant create`, `keys create` and `deploy` use). */
export interface SeedStores {
  readonly tenants: SqliteTenantsStore;
  readonly keys: SqliteKeysStore;
  readonly artifacts: SqliteArtifactsStore;
  readonly audit: SqliteAuditStore;
  readonly tenantAdmin: SqliteTenantAdmin;
}

/**
 * Opens the registry and audit databases of `db` and runs `fn` inside one transaction of each: the
 * use cases' own transactions nest as savepoints, so the whole seed costs one commit per file.
 * (BEGIN and COMMIT by hand: a better-sqlite3 transaction function cannot wait for the async use
 * cases, which answer at once on SQLite but through promises.)
 */
export async function inOneTransaction<T>(db: string, fn: (stores: SeedStores) => Promise<T>): Promise<T> {
  const paths = statePaths(db);
  const registry = openDb(paths.registryDb, registryMigrations);
  const auditDb = openDb(paths.auditDb, auditMigrations);
  try {
    const tenants = new SqliteTenantsStore(registry);
    const audit = new SqliteAuditStore(auditDb);
    const stores: SeedStores = {
      tenants,
      keys: new SqliteKeysStore(registry),
      artifacts: new SqliteArtifactsStore(registry),
      audit,
      tenantAdmin: new SqliteTenantAdmin(tenants, audit),
    };
    // Audit first, then the registry: the lock order of the use cases.
    auditDb.exec('BEGIN IMMEDIATE');
    registry.exec('BEGIN IMMEDIATE');
    try {
      const result = await fn(stores);
      registry.exec('COMMIT');
      auditDb.exec('COMMIT');
      return result;
    } catch (err) {
      if (registry.inTransaction) registry.exec('ROLLBACK');
      if (auditDb.inTransaction) auditDb.exec('ROLLBACK');
      throw err;
    }
  } finally {
    registry.close();
    auditDb.close();
  }
}

/** Tenant ids `t0001` ... in order: the same names at every size, so sizes differ by count only. */
export function tenantIds(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `t${String(i + 1).padStart(4, '0')}`);
}

export async function seedTenants(stores: SeedStores, ids: readonly string[]): Promise<void> {
  for (const id of ids) await createTenant(stores, { id, displayName: `Scale ${id}` }, { actor: 'bench' });
}

/** Creates `count` keys spread round-robin over `tenants`; returns the first raw key of each tenant. */
export async function seedKeys(
  stores: SeedStores,
  tenants: readonly string[],
  count: number,
): Promise<Map<string, string>> {
  const first = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const tenant = tenants[i % tenants.length]!;
    const { rawKey } = await createApiKey(stores, { tenant, label: `k${i}` });
    if (!first.has(tenant)) first.set(tenant, rawKey);
  }
  return first;
}

export interface FlowSeed {
  readonly tenants: readonly string[];
  /** Flows in all, spread round-robin over the tenants. */
  readonly flows: number;
  /** Versions of each flow, each a distinct artifact. */
  readonly versions: number;
}

/** The flow names seeded: `quote-00001` ...; flow i belongs to tenant i mod tenants. */
export function flowName(i: number): string {
  return `quote-${String(i + 1).padStart(5, '0')}`;
}

/**
 * Publishes every flow's versions through SqliteArtifactsStore.publish. The flow is compiled once per
 * version (the revisions differ in one message, so each version is its own artifact); each name's
 * IR is that one with tenant and flow replaced, as `svc dev --tenant` does (compileForPublication).
 */
export function seedFlows(stores: SeedStores, seed: FlowSeed): void {
  const compiled = Array.from({ length: seed.versions }, (_, v) => {
    const r = compileFlow(quoteFlowSource('bench', 'quote', v + 1));
    if (!r.ir) throw new Error(`the bench flow does not compile: ${JSON.stringify(r.diagnostics)}`);
    return r.ir;
  });
  const createdAt = isoNow();
  for (let i = 0; i < seed.flows; i++) {
    const tenant = seed.tenants[i % seed.tenants.length]!;
    const name = flowName(i);
    for (let v = 0; v < seed.versions; v++) {
      const ir: FlowIR = { ...compiled[v]!, tenant, flow: name };
      const bytes = irToJson(ir);
      stores.artifacts.publish({
        tenant,
        name,
        version: `1.0.${v}`,
        bytes,
        hash: sha256Hex(bytes),
        createdAt,
        source: quoteFlowSource(tenant, name, v + 1),
      });
    }
  }
}

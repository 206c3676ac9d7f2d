/**
 * Numbered SQL migrations of the PostgreSQL store: `migrations/NNNN_name.sql`, applied in order at
 * start, all pending ones in one transaction under a transaction-level advisory lock on the
 * schema, so nodes starting together apply each step once and the others wait, then see it done.
 * A database whose schema is newer than the files this build carries is refused: an older node
 * must not write rows a newer schema reads differently.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SvcError } from '../../common/errors.js';
import type { PgDb, PgTx } from './pg-db.js';

export interface PgMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** The migrations this build carries, in order. @throws when a file name or numbering is wrong (a build defect). */
export function bundledMigrations(dir: string = MIGRATIONS_DIR): PgMigration[] {
  const out: PgMigration[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = FILE.exec(file);
    if (m === null) throw new Error(`migration file "${file}" is not named NNNN_name.sql`);
    const version = Number(m[1]);
    if (version !== out.length + 1)
      throw new Error(`migration ${file} breaks the numbering: expected ${String(out.length + 1).padStart(4, '0')}`);
    out.push({ version, name: m[2]!, sql: readFileSync(`${dir}/${file}`, 'utf8') });
  }
  return out;
}

export interface MigrateResult {
  /** Versions applied by this call (empty when another node had applied them, or nothing was pending). */
  readonly applied: readonly number[];
  /** The schema's version afterwards. */
  readonly version: number;
}

/** The two-key advisory lock of schema changes: a fixed class, and the schema's name hashed by the server. */
const LOCK_CLASS = 0x5356_4d47; // 'SVMG'

/**
 * Brings the store's schema to the newest bundled version.
 * @throws SvcError `SVC_ERR_CONFLICT` when the database is newer than this build
 */
export async function migratePg(
  db: PgDb,
  migrations: readonly PgMigration[] = bundledMigrations(),
): Promise<MigrateResult> {
  const known = migrations.length === 0 ? 0 : migrations[migrations.length - 1]!.version;
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, db.schema]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${db.schema}`);
    await tx.query(`SET LOCAL search_path TO ${db.schema}`);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const current = await schemaVersion(tx);
    if (current > known) {
      throw new SvcError(
        'SVC_ERR_CONFLICT',
        `the store's schema is at version ${current}, newer than this build knows (${known}); run the newer svc, or point --store at another schema`,
      );
    }
    const applied: number[] = [];
    for (const m of migrations) {
      if (m.version <= current) continue;
      await tx.query(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return { applied, version: Math.max(current, known) };
  });
}

/** The highest applied version; 0 for a schema without migrations. */
export async function schemaVersion(tx: PgTx): Promise<number> {
  const r = await tx.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  return r.rows[0]?.v ?? 0;
}

/**
 * Hand-made rows and direct reads for black-box tests, on whichever store the pass runs on: the
 * sandbox's SQLite registry file, or in the PostgreSQL pass (SVC_TEST_STORE=postgres) the sandbox's
 * schema, through a child process (test/helpers/pg-sql-child.ts) so the calls stay synchronous.
 * The SQL must be what both dialects take: `?` placeholders (numbered for PostgreSQL here),
 * `ON CONFLICT ... DO NOTHING` rather than `INSERT OR IGNORE`, `true`/`false` for booleans.
 * Rows come back as SQLite gives them: PostgreSQL's booleans as 1/0 (bigints are numbers already).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { statePaths } from '../../src/common/paths.js';
import { parseStoreUrl } from '../../src/store/pg/store-url.js';
import type { Sandbox } from './svc.js';

const CHILD = resolve(dirname(fileURLToPath(import.meta.url)), 'pg-sql-child.js');

/** The part of better-sqlite3's statement the tests use. */
export interface StoreStatement<R = unknown> {
  get(...params: unknown[]): R | undefined;
  all(...params: unknown[]): R[];
  run(...params: unknown[]): void;
}

/** The part of better-sqlite3's handle the tests use, on either store. */
export interface StoreSql {
  prepare<R = unknown>(sql: string): StoreStatement<R>;
  exec(sql: string): void;
}

/** Which file of the state directory: on PostgreSQL every part is the one schema. */
export type StorePart = 'registry' | 'audit' | 'log' | 'ui';

/**
 * Runs `fn` with a handle on the sandbox's store (opened, then closed, around it): on SQLite the
 * file of `part`, which must exist (the server or a command made it).
 */
export function withStore<T>(sandbox: Sandbox, fn: (db: StoreSql) => T, part: StorePart = 'registry'): T {
  if (sandbox.store !== undefined) return fn(pgStoreSql(sandbox.store));
  const db = new Database(partFile(sandbox, part), { fileMustExist: part !== 'registry', timeout: 5000 });
  try {
    return fn({
      prepare: <R>(sql: string) => {
        const stmt = db.prepare(sql);
        return {
          get: (...p: unknown[]) => stmt.get(...p) as R | undefined,
          all: (...p: unknown[]) => stmt.all(...p) as R[],
          run: (...p: unknown[]) => void stmt.run(...p),
        };
      },
      exec: (sql) => void db.exec(sql),
    });
  } finally {
    db.close();
  }
}

/** The SQLite file of one part of the sandbox's state directory. */
function partFile(sandbox: Sandbox, part: StorePart): string {
  const paths = statePaths(sandbox.db);
  return { registry: paths.registryDb, audit: paths.auditDb, log: paths.logDb, ui: paths.uiDb }[part];
}

/** Rows of one query on the sandbox's store (its file `part` on SQLite). */
export function storeRows<R>(sandbox: Sandbox, part: StorePart, sql: string, ...params: unknown[]): R[] {
  return withStore(sandbox, (db) => db.prepare<R>(sql).all(...params), part);
}

/**
 * Everything the sandbox's store holds, as text, for assertions that a secret is stored nowhere:
 * the bytes of the part's SQLite file (latin1), or on PostgreSQL every table of the schema (each
 * rendered by query_to_xml, bytea as base64).
 */
export function storedText(sandbox: Sandbox, part: StorePart = 'registry'): string {
  if (sandbox.store === undefined) return readFileSync(partFile(sandbox, part)).toString('latin1');
  const [row] = runPg<{ text: string | null }>(
    sandbox.store,
    `SELECT string_agg(query_to_xml(format('SELECT * FROM %I.%I', table_schema, table_name), true, false, '')::text, E'\\n') AS text
       FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    [],
  );
  return row?.text ?? '';
}

function pgStoreSql(url: string): StoreSql {
  const statement = <R>(sql: string): StoreStatement<R> => {
    const text = numberPlaceholders(sql);
    return {
      get: (...p) => runPg<R>(url, text, p)[0],
      all: (...p) => runPg<R>(url, text, p),
      run: (...p) => void runPg(url, text, p),
    };
  };
  return { prepare: statement, exec: (sql) => void runPg(url, sql, []) };
}

/** `?` → `$1`, `$2`, ... outside quoted literals. */
function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/'(?:[^']|'')*'|\?/g, (m) => (m === '?' ? `$${++n}` : m));
}

/** Drops the schema of a store URL, with everything in it (a sandbox's cleanup). */
export function dropPgSchema(url: string, schema: string): void {
  runPg(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`, [], false);
}

function runPg<R>(url: string, sql: string, params: unknown[], migrate = true): R[] {
  const input = JSON.stringify({ url, statements: [{ sql, params }], migrate }, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer'
      ? { $bytes: Buffer.from((v as { data: number[] }).data).toString('base64') }
      : v,
  );
  const r = spawnSync(process.execPath, [CHILD], {
    input,
    encoding: 'utf8',
    timeout: 30_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`SQL on ${parseStoreUrl(url).redacted} failed: ${sql}\n${r.stderr}`);
  const [rows] = JSON.parse(r.stdout, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && '$bytes' in v ? Buffer.from((v as { $bytes: string }).$bytes, 'base64') : v,
  ) as R[][];
  return rows ?? [];
}

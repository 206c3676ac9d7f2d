/**
 * The PostgreSQL the tests use: SVC_TEST_PG_URL, by default the machine's own server on
 * 127.0.0.1:5432 (trust authentication, database `test`). Each test file works in a schema of its
 * own, made fresh and dropped afterwards, so runs and files never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_TEST_URL = process.env.SVC_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface PgSchema {
  readonly name: string;
  /** The store URL naming this schema, as `--store` takes it. */
  readonly url: string;
  drop(): Promise<void>;
}

/** A new, empty schema name (nothing is created until the store migrates into it). */
export async function freshPgSchema(prefix = 'svct'): Promise<PgSchema> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery('SELECT 1'); // fails here, naming the URL, when no server answers
  return {
    name,
    url: schemaUrl(name),
    drop: () => adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`).then(() => undefined),
  };
}

/** The store URL naming schema `name` of the test PostgreSQL, as `--store` takes it. */
export function schemaUrl(name: string): string {
  return `${PG_TEST_URL}${PG_TEST_URL.includes('?') ? '&' : '?'}schema=${name}`;
}

/** One statement on a connection of its own (setup and inspection outside the code under test). */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`the tests need PostgreSQL at ${PG_TEST_URL} (set SVC_TEST_PG_URL): ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    return await client.query<R>(sql, params);
  } finally {
    await client.end();
  }
}

/**
 * Child of test/helpers/store-sql.ts in the suite's PostgreSQL pass: reads {url, statements} as
 * JSON on stdin, migrates the store's schema (as any `svc` command would), runs the statements in
 * one transaction and prints each one's rows as JSON. A child process, so the tests' hand-made rows
 * stay as synchronous as better-sqlite3's.
 */
import { migratePg } from '../../src/store/pg/migrate.js';
import { PgDb } from '../../src/store/pg/pg-db.js';
import { parseStoreUrl } from '../../src/store/pg/store-url.js';

interface Request {
  readonly url: string;
  readonly statements: readonly { sql: string; params: unknown[] }[];
  /** False for statements outside the store's schema (dropping it). @default true */
  readonly migrate?: boolean;
}

const chunks: Buffer[] = [];
for await (const c of process.stdin) chunks.push(c as Buffer);
const req = JSON.parse(Buffer.concat(chunks).toString('utf8'), revive) as Request;
const db = new PgDb(parseStoreUrl(req.url), { maxConnections: 1, applicationName: 'svc-test-sql' });
try {
  if (req.migrate !== false) await migratePg(db);
  const results = await db.transaction(async (tx) => {
    const rows: unknown[][] = [];
    for (const s of req.statements) rows.push(((await tx.query(s.sql, s.params)).rows ?? []).map(asSqliteRow));
    return rows;
  });
  process.stdout.write(
    JSON.stringify(results, (_k, v: unknown) =>
      isBufferJson(v) ? { $bytes: Buffer.from(v.data).toString('base64') } : v,
    ),
  );
} finally {
  await db.close();
}

/** Booleans as SQLite stores them (1/0), so one assertion holds on both stores. */
function asSqliteRow(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) if (typeof v === 'boolean') row[k] = v ? 1 : 0;
  return row;
}

/** Buffers travel as {$bytes: base64} both ways. */
function revive(_key: string, value: unknown): unknown {
  return value !== null && typeof value === 'object' && '$bytes' in value
    ? Buffer.from((value as { $bytes: string }).$bytes, 'base64')
    : value;
}

function isBufferJson(v: unknown): v is { type: 'Buffer'; data: number[] } {
  return (
    v !== null &&
    typeof v === 'object' &&
    (v as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((v as { data?: unknown }).data)
  );
}

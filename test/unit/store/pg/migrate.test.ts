import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminQuery, freshPgSchema, type PgSchema } from '../../../helpers/pg.js';
import { bundledMigrations, migratePg } from '../../../../src/store/pg/migrate.js';
import { PgDb } from '../../../../src/store/pg/pg-db.js';
import { parseStoreUrl } from '../../../../src/store/pg/store-url.js';

let schema: PgSchema;
const open: PgDb[] = [];
const db = () => {
  const d = new PgDb(parseStoreUrl(schema.url), { maxConnections: 2 });
  open.push(d);
  return d;
};

before(async () => (schema = await freshPgSchema()));
after(async () => {
  for (const d of open) await d.close();
  await schema.drop();
});

test('the bundled files are numbered 0001, 0002, ... without a gap', () => {
  const all = bundledMigrations();
  assert.ok(all.length >= 1);
  all.forEach((m, i) => assert.equal(m.version, i + 1));
});

test('four nodes starting at once: each step is applied once, all end on the newest version', async () => {
  const results = await Promise.all([db(), db(), db(), db()].map((d) => migratePg(d)));
  const known = bundledMigrations().length;
  assert.deepEqual(
    results.map((r) => r.version),
    [known, known, known, known],
  );
  assert.deepEqual(
    results.flatMap((r) => r.applied).sort((a, b) => a - b),
    Array.from({ length: known }, (_, i) => i + 1),
  );
  const rows = await adminQuery(`SELECT version FROM ${schema.name}.schema_migrations ORDER BY version`);
  assert.equal(rows.rowCount, known);
  assert.deepEqual((await migratePg(db())).applied, []);
});

test('a schema newer than this build is refused, and nothing is changed', async () => {
  await adminQuery(`INSERT INTO ${schema.name}.schema_migrations (version, name) VALUES (9999, 'from_the_future')`);
  try {
    await assert.rejects(migratePg(db()), /schema is at version 9999, newer than this build knows/);
    const rows = await adminQuery(`SELECT count(*)::int AS n FROM ${schema.name}.schema_migrations`);
    assert.equal(rows.rows[0]!.n, bundledMigrations().length + 1);
  } finally {
    await adminQuery(`DELETE FROM ${schema.name}.schema_migrations WHERE version = 9999`);
  }
});

test('a step that fails rolls back every step of that start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  const other = await freshPgSchema();
  try {
    writeFileSync(join(dir, '0001_ok.sql'), 'CREATE TABLE made_by_one (x int);');
    writeFileSync(join(dir, '0002_broken.sql'), 'CREATE TABLE made_by_two (x int); SELECT * FROM no_such_table;');
    const d = new PgDb(parseStoreUrl(other.url));
    open.push(d);
    await assert.rejects(migratePg(d, bundledMigrations(dir)), /no_such_table/);
    const tables = await adminQuery(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [
      other.name,
    ]);
    assert.deepEqual(tables.rows, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await other.drop();
  }
});

test('a misnamed or misnumbered file is a build defect, named in the error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mig-'));
  try {
    writeFileSync(join(dir, '0001_a.sql'), '');
    writeFileSync(join(dir, '0003_c.sql'), '');
    assert.throws(() => bundledMigrations(dir), /0003_c\.sql breaks the numbering: expected 0002/);
    rmSync(join(dir, '0003_c.sql'));
    writeFileSync(join(dir, '2_b.sql'), '');
    assert.throws(() => bundledMigrations(dir), /"2_b\.sql" is not named NNNN_name\.sql/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an unreachable server is StorageUnavailableError, with the password kept out', async () => {
  const d = new PgDb(parseStoreUrl('postgres://svc:s3cret@127.0.0.1:1/test'), { connectTimeoutMs: 1000 });
  open.push(d);
  await assert.rejects(
    d.query('SELECT 1'),
    (err: Error) => err.name === 'StorageUnavailableError' && !err.message.includes('s3cret'),
  );
});

/** Incremental auto-vacuum: new files are created with it, small old ones converted at open, free pages given back in slices. */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  AUTO_VACUUM_INCREMENTAL,
  fileBytes,
  inspectDatabaseFile,
  reclaimFreePagesInSlices,
  vacuumFile,
} from './auto-vacuum.js';
import { CONVERT_AT_OPEN_MAX_BYTES, migrate, openDb, type Migration } from './db.js';
import { auditMigrations } from './migrations/audit.js';
import { logMigrations } from './migrations/log.js';
import { registryMigrations } from './migrations/registry.js';
import { uiMigrations } from './migrations/ui.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-autovac-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = () => join(dir, `db-${++n}.db`);

const BLOB_TABLE: Migration[] = [
  { version: 1, name: 'blobs', sql: 'CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB NOT NULL)' },
];

/** A file as a version before incremental auto-vacuum made it: mode 0, `bytes` of rows. */
function oldStyleFile(path: string, bytes: number): number {
  const db = new Database(path);
  migrate(db, BLOB_TABLE);
  const rows = Math.ceil(bytes / 4000);
  const insert = db.prepare('INSERT INTO blobs (body) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(Buffer.alloc(4000, i % 251));
  })();
  assert.equal(db.pragma('auto_vacuum', { simple: true }), 0);
  db.close();
  return rows;
}

const count = (db: Database.Database) => (db.prepare('SELECT count(*) AS n FROM blobs').get() as { n: number }).n;

describe('auto_vacuum', () => {
  for (const [name, migrations] of [
    ['registry', registryMigrations],
    ['log', logMigrations],
    ['audit', auditMigrations],
    ['ui', uiMigrations],
  ] as const) {
    it(`a new ${name} database file reports auto_vacuum=2, journal_mode=delete and synchronous=FULL`, () => {
      const path = file();
      openDb(path, migrations).close();
      const db = new Database(path, { readonly: true });
      try {
        assert.equal(db.pragma('auto_vacuum', { simple: true }), AUTO_VACUUM_INCREMENTAL);
        assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
      } finally {
        db.close();
      }
      const rw = openDb(path, migrations);
      try {
        assert.equal(rw.pragma('synchronous', { simple: true }), 2);
      } finally {
        rw.close();
      }
    });
  }

  it('an old-style file under the size limit is converted when opened and keeps its rows', () => {
    const path = file();
    const rows = oldStyleFile(path, 1024 * 1024);
    const db = openDb(path, BLOB_TABLE);
    try {
      assert.equal(db.pragma('auto_vacuum', { simple: true }), AUTO_VACUUM_INCREMENTAL);
      assert.equal(count(db), rows);
    } finally {
      db.close();
    }
  });

  it('an old-style file over the size limit is opened as it is (no VACUUM at open), and vacuumFile converts it keeping its rows', () => {
    const path = file();
    const rows = oldStyleFile(path, CONVERT_AT_OPEN_MAX_BYTES + 1024 * 1024);
    openDb(path, BLOB_TABLE).close();
    assert.equal(inspectDatabaseFile(path).autoVacuum, 0);
    const r = vacuumFile(path);
    assert.equal(r.action, 'converted');
    assert.equal(inspectDatabaseFile(path).autoVacuum, AUTO_VACUUM_INCREMENTAL);
    const db = openDb(path, BLOB_TABLE);
    try {
      assert.equal(count(db), rows);
    } finally {
      db.close();
    }
  });

  it('reclaimFreePagesInSlices gives the pages of deleted rows back and the file shrinks', async () => {
    const path = file();
    const db = openDb(path, BLOB_TABLE);
    try {
      const insert = db.prepare('INSERT INTO blobs (body) VALUES (?)');
      db.transaction(() => {
        for (let i = 0; i < 2000; i++) insert.run(Buffer.alloc(4000, 7));
      })();
      const full = fileBytes(path);
      db.exec('DELETE FROM blobs WHERE id <= 1500');
      assert.equal(fileBytes(path), full, 'a delete alone keeps the file as large');
      const r = await reclaimFreePagesInSlices(db, { between: () => Promise.resolve(true), pagesPerSlice: 64 });
      assert.ok(r.slices > 1, `in several slices (${r.slices})`);
      assert.equal(db.pragma('freelist_count', { simple: true }), 0);
      assert.ok(fileBytes(path) < full * 0.35, `${fileBytes(path)} bytes left of ${full}`);
      assert.equal(count(db), 500);
    } finally {
      db.close();
    }
  });

  it('reclaimFreePagesInSlices stops when between() answers false, and a later call finishes', async () => {
    const path = file();
    const db = openDb(path, BLOB_TABLE);
    try {
      const insert = db.prepare('INSERT INTO blobs (body) VALUES (?)');
      db.transaction(() => {
        for (let i = 0; i < 500; i++) insert.run(Buffer.alloc(4000, 7));
      })();
      db.exec('DELETE FROM blobs');
      const r = await reclaimFreePagesInSlices(db, { between: () => Promise.resolve(false), pagesPerSlice: 16 });
      assert.deepEqual([r.slices, r.pagesFreed, r.stopped], [1, 16, true]);
      assert.ok((db.pragma('freelist_count', { simple: true }) as number) > 0);
      await reclaimFreePagesInSlices(db, { between: () => Promise.resolve(true), pagesPerSlice: 16 });
      assert.equal(db.pragma('freelist_count', { simple: true }), 0);
    } finally {
      db.close();
    }
  });

  it('a file without incremental auto-vacuum has nothing given back (its free pages stay for reuse)', async () => {
    const path = file();
    oldStyleFile(path, CONVERT_AT_OPEN_MAX_BYTES + 512 * 1024);
    const db = openDb(path, BLOB_TABLE);
    try {
      db.exec('DELETE FROM blobs');
      const r = await reclaimFreePagesInSlices(db, { between: () => Promise.resolve(true) });
      assert.deepEqual([r.slices, r.pagesFreed], [0, 0]);
    } finally {
      db.close();
    }
  });
});

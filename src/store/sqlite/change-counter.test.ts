import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { changeCounterOf } from './change-counter.js';
import { openDb } from './db.js';

describe('changeCounterOf', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counter-'));
  const file = join(dir, 'x.db');
  const mine = openDb(file, [{ version: 1, name: 't', sql: 'CREATE TABLE t (v INTEGER)' }]);
  const other = openDb(file, []);
  const counter = changeCounterOf(mine);
  after(() => {
    counter.close();
    mine.close();
    other.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stays the same while nobody commits, reads included', () => {
    const a = counter.read();
    other.prepare('SELECT count(*) FROM t').get();
    mine.prepare('SELECT count(*) FROM t').get();
    assert.equal(counter.read(), a);
  });

  it('changes on every commit of another connection, as PRAGMA data_version does', () => {
    const version = mine.prepare('PRAGMA data_version').pluck();
    for (let i = 0; i < 3; i++) {
      const [c0, v0] = [counter.read(), version.get()];
      other.prepare('INSERT INTO t (v) VALUES (?)').run(i);
      assert.notEqual(counter.read(), c0);
      assert.notEqual(version.get(), v0);
    }
  });

  it('changes on a commit of its own connection too', () => {
    const c0 = counter.read();
    mine.prepare('INSERT INTO t (v) VALUES (1)').run();
    assert.notEqual(counter.read(), c0);
  });

  it('counts its own changes for a database in memory', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (v INTEGER)');
    const c = changeCounterOf(db);
    const c0 = c.read();
    assert.equal(c.read(), c0);
    db.prepare('INSERT INTO t (v) VALUES (1)').run();
    assert.notEqual(c.read(), c0);
    c.close();
    db.close();
  });
});

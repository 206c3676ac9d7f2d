/**
 * The audit spool (store/audit/audit-spool.ts): records read back as written, torn ones skipped,
 * owners told alive or dead, and a recovery that chains each entry a dead writer left exactly once,
 * beside what the writer chained itself and beside another recoverer.
 */
import assert from 'node:assert/strict';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  AuditSpool,
  deadSpools,
  readSpool,
  recoverAuditSpools,
  spoolOwnerAlive,
} from '../../../../src/store/audit/audit-spool.js';
import { packAuditEntries, prepareAuditEntry, type PreparedAuditEntry } from '../../../../src/store/contracts/index.js';
import { openDb } from '../../../../src/store/sqlite/db.js';
import { auditMigrations } from '../../../../src/store/sqlite/migrations/audit.js';
import { SqliteAuditStore } from '../../../../src/store/sqlite/sqlite-audit-store.js';

const root = mkdtempSync(join(tmpdir(), 'svc-audit-spool-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const dir = join(root, `case-${++n}`);
  mkdirSync(dir);
  return dir;
};

const entries = (count: number, from = 0): PreparedAuditEntry[] =>
  Array.from({ length: count }, (_, i) =>
    prepareAuditEntry({ tenant: 'acme', eventType: `e${from + i}`, payload: { i: from + i } }),
  );

/** A spool file as a dead process would have left it (no PID is above Linux's limit of 2^22). */
const DEAD = '9999999-1-0123456789abcdef.spool';

function leaveSpool(dir: string, records: [number, PreparedAuditEntry[]][]): string {
  const path = join(dir, DEAD);
  writeFileSync(path, records.map(([first, es]) => `\n${JSON.stringify([first, ...packAuditEntries(es)])}`).join(''));
  return path;
}

describe('audit spool', () => {
  it('reads back what was written, in order and numbered, and is removed on a clean close', async () => {
    const dir = fresh();
    const spool = await AuditSpool.open(dir);
    const es = entries(5);
    await spool.write(1, packAuditEntries(es.slice(0, 2)));
    await spool.write(3, packAuditEntries(es.slice(2)));
    assert.deepEqual(
      readSpool(spool.path).map((s) => [s.seq, s.entry.eventType]),
      es.map((e, i) => [i + 1, e.eventType]),
    );
    assert.equal(spoolOwnerAlive(spool.name), true, 'this process owns it');
    assert.deepEqual(deadSpools(dir), [], 'a live process spool is never listed for recovery');
    await spool.close(true);
    assert.equal(existsSync(spool.path), false);
  });

  it('skips a record torn by a failed write and still reads the ones after it', () => {
    const dir = fresh();
    const es = entries(3);
    const path = leaveSpool(dir, [[1, es.slice(0, 1)]]);
    appendFileSync(path, `\n[2,"acme","e1","2026-`); // cut mid-record
    appendFileSync(path, `\n${JSON.stringify([3, ...packAuditEntries(es.slice(2))])}`);
    appendFileSync(path, '\n{"not":"a record"}\n[4, 5]');
    assert.deepEqual(
      readSpool(path).map((s) => s.seq),
      [1, 3],
    );
  });

  it('tells a dead owner from a live one, and leaves names it did not make alone', () => {
    assert.equal(spoolOwnerAlive(DEAD), false, 'no such process');
    const initStart = Number(readFileSync('/proc/1/stat', 'utf8').split(') ')[1]!.split(' ')[19]);
    assert.equal(spoolOwnerAlive(`1-${initStart}-0123456789abcdef.spool`), true, 'PID 1 with its start time runs');
    assert.equal(spoolOwnerAlive(`1-${initStart + 1}-0123456789abcdef.spool`), false, 'PID 1, started at another tick');
    assert.equal(spoolOwnerAlive(`${process.pid}-1-0123456789abcdef.spool`), false, 'this PID, an earlier start');
    assert.equal(spoolOwnerAlive('notes.txt'), true, 'not a spool: never touched');
    const dir = fresh();
    writeFileSync(join(dir, DEAD), '');
    writeFileSync(join(dir, 'x-1-0123456789abcdef.spool'), '');
    assert.deepEqual(deadSpools(dir), [DEAD]);
  });

  it('recovery chains what the writer had not chained, once, and removes the file and its mark', () => {
    const dir = fresh();
    const db = openDb(join(dir, 'audit.db'), auditMigrations);
    const store = new SqliteAuditStore(db);
    const es = entries(6);
    // The writer chained the first three with its mark (as its thread does), then the process died.
    store.appendMarked(es.slice(0, 3), [{ spool: DEAD, seq: 3 }]);
    const path = leaveSpool(dir, [
      [1, es.slice(0, 3)],
      [4, es.slice(3)],
    ]);
    assert.deepEqual(recoverAuditSpools(dir, store), { spools: 1, entries: 3 });
    assert.deepEqual(
      store.latest('acme', 10).map((e) => e.eventType),
      es.map((e) => e.eventType),
    );
    assert.equal(store.verify('acme').ok, true);
    assert.equal(existsSync(path), false, 'the recovered spool is removed');
    assert.deepEqual(store.spoolMarks(), [], 'and its mark, the file being gone');
    assert.deepEqual(recoverAuditSpools(dir, store), { spools: 0, entries: 0 });
    assert.equal(store.count('acme'), 6);
    db.close();
  });

  it('two recoverers of one spool chain each entry once (the file is read inside the transaction)', () => {
    const dir = fresh();
    const file = join(dir, 'audit.db');
    const db1 = openDb(file, auditMigrations);
    const db2 = openDb(file, auditMigrations);
    const first = new SqliteAuditStore(db1);
    const second = new SqliteAuditStore(db2);
    const es = entries(4);
    const path = leaveSpool(dir, [[1, es]]);
    // The second reads the file before the first chains and removes it, but chains after: it finds the mark.
    const stale = readSpool(path);
    assert.equal(
      first.chainSpooled(DEAD, () => readSpool(path)),
      4,
    );
    assert.equal(
      second.chainSpooled(DEAD, () => stale),
      0,
      'the mark stops a stale read',
    );
    rmSync(path);
    first.forgetSpools([DEAD]);
    assert.equal(
      second.chainSpooled(DEAD, () => readSpool(path)),
      0,
      'the file gone: nothing to read',
    );
    assert.equal(first.count('acme'), 4);
    assert.equal(first.verify('acme').ok, true);
    db1.close();
    db2.close();
  });

  it('a spool left empty, or never written, is removed without chaining anything', () => {
    const dir = fresh();
    const db = openDb(join(dir, 'audit.db'), auditMigrations);
    const store = new SqliteAuditStore(db);
    writeFileSync(join(dir, DEAD), '');
    assert.deepEqual(recoverAuditSpools(dir, store), { spools: 1, entries: 0 });
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.spool')),
      [],
    );
    db.close();
  });

  it('a sweep of marks removes those of cleanly stopped writers only (file gone, process gone)', async () => {
    const dir = fresh();
    const db = openDb(join(dir, 'audit.db'), auditMigrations);
    const store = new SqliteAuditStore(db);
    const live = await AuditSpool.open(dir);
    store.appendMarked(entries(1), [{ spool: DEAD, seq: 1 }]);
    store.appendMarked(entries(1, 1), [{ spool: live.name, seq: 1 }]);
    assert.deepEqual(recoverAuditSpools(dir, store), { spools: 0, entries: 0 });
    assert.equal(store.spoolMarks().length, 2, 'no sweep unless asked (or a spool was recovered)');
    recoverAuditSpools(dir, store, true);
    assert.deepEqual(store.spoolMarks(), [live.name], 'the live writer keeps its mark');
    await live.close(true);
    db.close();
  });
});

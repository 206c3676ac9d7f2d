/** AuditThreadWriter: entries queued on the calling thread reach the chain through the worker, in order. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fillBut, mountTmpfs, unmountTmpfs } from '../../../helpers/tmpfs.js';
import { waitFor } from '../../../helpers/wait.js';
import { SqliteAuditStore } from '../../../../src/store/sqlite/sqlite-audit-store.js';
import { AuditThreadWriter } from '../../../../src/store/audit/audit-thread.js';
import { readSpool } from '../../../../src/store/audit/audit-spool.js';
import { openDb } from '../../../../src/store/sqlite/db.js';
import { auditMigrations } from '../../../../src/store/sqlite/migrations/audit.js';

describe('AuditThreadWriter', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-audit-thread-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;

  /** A writer on a fresh audit.db, and a reader on the same file (the test's own connection). */
  function setup(flushIntervalMs = 5): {
    writer: AuditThreadWriter;
    reader: SqliteAuditStore;
    done: () => Promise<void>;
  } {
    const file = join(dir, `audit-${++n}.db`);
    const db = openDb(file, auditMigrations);
    const errors: string[] = [];
    const writer = new AuditThreadWriter(file, { flushIntervalMs, onError: (m) => errors.push(m) });
    return {
      writer,
      reader: new SqliteAuditStore(db),
      done: async () => {
        await writer.close();
        db.close();
        assert.deepEqual(errors, [], 'the worker reported no failed write');
      },
    };
  }

  it('append() only queues; flush() resolves once every earlier entry is in one chain, in order', async () => {
    const { writer, reader, done } = setup(60_000);
    for (let i = 0; i < 10; i++) writer.append({ tenant: 'acme', eventType: `e${i}` });
    assert.equal(reader.count('acme'), 0, 'append must not write synchronously');
    await writer.flush();
    assert.deepEqual(
      reader.latest('acme', 10).map((e) => e.eventType),
      Array.from({ length: 10 }, (_, i) => `e${i}`),
    );
    assert.equal(reader.verify('acme').ok, true);
    await done();
  });

  it('writes queued entries on its timer, without a flush', async () => {
    const { writer, reader, done } = setup(5);
    writer.append({ tenant: 'acme', eventType: 'timed' });
    await waitFor('the entry written by the timer', () => reader.count('acme') === 1, 5000);
    await done();
  });

  it('fixes created_at, correlation id and payload when append is called', async () => {
    const { writer, reader, done } = setup(60_000);
    const payload = { n: 1 };
    writer.append({ tenant: 'acme', eventType: 'a', payload, correlationId: 'req-1' });
    payload.n = 2;
    await writer.flush();
    const [e] = reader.latest('acme', 1);
    assert.equal(e!.payload, '{"n":1}');
    assert.equal(e!.correlationId, 'req-1');
    await done();
  });

  it('close() writes what is queued, runs once, and later appends are ignored', async () => {
    const { writer, reader, done } = setup(60_000);
    writer.append({ tenant: 'acme', eventType: 'a' });
    const closing = writer.close();
    assert.equal(writer.close(), closing);
    await closing;
    writer.append({ tenant: 'acme', eventType: 'b' });
    assert.deepEqual(
      reader.latest('acme', 5).map((e) => e.eventType),
      ['a'],
    );
    await done();
  });

  it('with a spool, an entry is durable (spooled) while the chain cannot be written, then chained once; a clean close removes the spool', async () => {
    const file = join(dir, `audit-${++n}.db`);
    const spoolDir = join(dir, `spool-${n}`);
    const db = openDb(file, auditMigrations);
    const reader = new SqliteAuditStore(db);
    const errors: string[] = [];
    const writer = new AuditThreadWriter(file, { flushIntervalMs: 60_000, spoolDir, onError: (m) => errors.push(m) });
    // This connection holds the database's write lock: the writer thread cannot commit.
    db.exec('BEGIN IMMEDIATE');
    writer.append({ tenant: 'acme', eventType: 'acknowledged', correlationId: 'm-1' });
    await writer.committed();
    writer.append({ tenant: 'acme', eventType: 'later' });
    await writer.committed();
    const [name] = readdirSync(spoolDir);
    assert.ok(name?.endsWith('.spool'), 'the spool file of this process');
    assert.deepEqual(
      readSpool(join(spoolDir, name)).map((s) => [s.seq, s.entry.eventType, s.entry.correlationId]),
      [
        [1, 'acknowledged', 'm-1'],
        [2, 'later', readSpool(join(spoolDir, name))[1]!.entry.correlationId],
      ],
      'both entries spooled, in order, before any commit',
    );
    assert.equal(reader.count('acme'), 0, 'nothing chained yet');
    db.exec('COMMIT');
    await writer.flush();
    assert.deepEqual(
      reader.latest('acme', 5).map((e) => e.eventType),
      ['acknowledged', 'later'],
    );
    assert.deepEqual(
      db.prepare('SELECT spool, seq FROM audit_spool_marks').all(),
      [{ spool: name, seq: 2 }],
      'the mark moved with the commit',
    );
    await writer.close();
    assert.deepEqual(readdirSync(spoolDir), [], 'a clean close leaves no spool');
    assert.equal(reader.count('acme'), 2, 'each entry chained once');
    assert.deepEqual(errors, [], 'the lock was held shorter than the busy timeout: no failed commit');
    db.close();
  });

  it('a spool past its size goes on in a new file; the old one is removed once chained', async () => {
    const file = join(dir, `audit-${++n}.db`);
    const spoolDir = join(dir, `spool-${n}`);
    const db = openDb(file, auditMigrations);
    const reader = new SqliteAuditStore(db);
    const writer = new AuditThreadWriter(file, { flushIntervalMs: 60_000, spoolDir, spoolRotateBytes: 1 });
    const names = new Set<string>();
    for (let i = 0; i < 5; i++) {
      writer.append({ tenant: 'acme', eventType: `e${i}` });
      await writer.committed();
      for (const f of readdirSync(spoolDir)) names.add(f);
    }
    await writer.flush();
    await waitFor('retired spools removed', () => readdirSync(spoolDir).length <= 1, 5000);
    assert.ok(names.size >= 3, `several spool files were used (${names.size})`);
    assert.deepEqual(
      reader.latest('acme', 10).map((e) => e.eventType),
      ['e0', 'e1', 'e2', 'e3', 'e4'],
    );
    assert.equal(reader.verify('acme').ok, true);
    await writer.close();
    assert.deepEqual(readdirSync(spoolDir), []);
    db.close();
  });

  it('a spool on a full disk: each acknowledgement waits for its entry’s commit instead, and the failure is told once', async (t) => {
    const spoolDir = join(dir, `full-spool-${++n}`);
    mkdirSync(spoolDir);
    if (!mountTmpfs(spoolDir, 1)) return t.skip('needs root to mount a small tmpfs');
    const file = join(dir, `audit-${n}.db`);
    const db = openDb(file, auditMigrations);
    const errors: string[] = [];
    const writer = new AuditThreadWriter(file, { flushIntervalMs: 60_000, spoolDir, onError: (m) => errors.push(m) });
    try {
      const reader = new SqliteAuditStore(db);
      writer.append({ tenant: 'acme', eventType: 'e0' }); // spooled before the disk fills
      await writer.committed();
      fillBut(join(spoolDir, 'ballast'), spoolDir, 0);
      for (let i = 1; i <= 3; i++) {
        writer.append({ tenant: 'acme', eventType: `e${i}`, payload: { pad: 'x'.repeat(8192) } });
        await writer.committed();
        assert.equal(reader.count('acme'), i + 1, `entry ${i} is chained when its acknowledgement may go out`);
      }
      assert.equal(errors.length, 1, `one line for three failed spool writes: ${errors.join(' | ')}`);
      assert.match(errors[0]!, /audit spool write failed; acknowledgements wait for the chain's commit instead/);
      await writer.flush();
      assert.equal(reader.verify('acme').ok, true);
    } finally {
      await writer.close();
      db.close();
      await unmountTmpfs(spoolDir);
    }
  });
});

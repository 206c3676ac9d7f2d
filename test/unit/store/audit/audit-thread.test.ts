/** AuditThreadWriter: entries queued on the calling thread reach the chain through the worker, in order. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fillBut, mountTmpfs, unmountTmpfs } from '../../../helpers/tmpfs.js';
import { waitFor } from '../../../helpers/wait.js';
import { SqliteAuditStore } from '../../../../src/store/sqlite/sqlite-audit-store.js';
import { AuditThreadWriter, PATIENCE_MS } from '../../../../src/store/audit/audit-thread.js';
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

  /** A writer with a spool on a fresh audit.db; `db` is the test's own connection to it. */
  function spooled(
    flushIntervalMs: number,
    patienceMs?: number,
  ): {
    writer: AuditThreadWriter;
    reader: SqliteAuditStore;
    db: ReturnType<typeof openDb>;
    spoolDir: string;
    spooledEntries: () => [number, string, string][];
    errors: string[];
  } {
    const file = join(dir, `audit-${++n}.db`);
    const spoolDir = join(dir, `spool-${n}`);
    const db = openDb(file, auditMigrations);
    const errors: string[] = [];
    const writer = new AuditThreadWriter(file, {
      flushIntervalMs,
      spoolDir,
      patienceMs,
      onError: (m) => errors.push(m),
    });
    const spooledEntries = (): [number, string, string][] =>
      readdirSync(spoolDir).flatMap((name) =>
        readSpool(join(spoolDir, name)).map((s): [number, string, string] => [
          s.seq,
          s.entry.eventType,
          s.entry.correlationId,
        ]),
      );
    return { writer, reader: new SqliteAuditStore(db), db, spoolDir, spooledEntries, errors };
  }

  /** The entry of queued message `id`, as a queue record carries it (queue-receipts.ts's form). */
  const receipt = (id: number) => ({
    tenant: 'acme',
    eventType: 'queue.message.enqueued',
    correlationId: `m-${id}`,
    payload: { flow: 'orders', id, offset: id * 100, source: 'enqueue' },
  });

  /** Long enough for a 1 ms flush timer to have handed the entries to the worker. */
  const handedOver = () => new Promise((r) => setTimeout(r, 50));

  it('receipts held by their queue records are chained without a spool write while nothing waits', async () => {
    const { writer, reader, db, spooledEntries, errors } = spooled(1);
    for (let id = 1; id <= 3; id++) writer.appendCovered(receipt(id));
    await writer.flush();
    assert.deepEqual(spooledEntries(), [], 'no spool write: each record holds its entry until it is chained');
    await writer.committed();
    assert.deepEqual(spooledEntries(), [], 'chained, they count as committed: a wait writes nothing');
    assert.deepEqual(
      reader.latest('acme', 5).map((e) => e.correlationId),
      ['m-1', 'm-2', 'm-3'],
    );
    await writer.close();
    assert.deepEqual(errors, []);
    db.close();
  });

  it('a wait after receipts handed over unspooled: the spool write that ends it holds them too, before their chain, and each is chained once', async () => {
    const { writer, reader, db, spooledEntries, errors } = spooled(1);
    db.exec('BEGIN IMMEDIATE'); // the writer thread cannot commit
    writer.appendCovered(receipt(1));
    writer.appendCovered(receipt(2));
    await handedOver();
    assert.deepEqual(spooledEntries(), [], 'handed over without a spool write');
    // A delivery's entry, waited for before its checkpoint: the receipts' records may be passed after it.
    writer.append({ tenant: 'acme', eventType: 'queue.message.processed', correlationId: 'p-1' });
    await writer.committed();
    assert.deepEqual(
      spooledEntries(),
      [
        [1, 'queue.message.enqueued', 'm-1'],
        [2, 'queue.message.enqueued', 'm-2'],
        [3, 'queue.message.processed', 'p-1'],
      ],
      'the receipts spooled ahead of the entry waited for, in order',
    );
    assert.equal(reader.count('acme'), 0, 'nothing chained: the wait ended on the spool write');
    db.exec('COMMIT');
    await writer.flush();
    assert.deepEqual(
      reader.latest('acme', 5).map((e) => e.correlationId),
      ['m-1', 'm-2', 'p-1'],
      'each chained once, in order',
    );
    assert.deepEqual(
      db.prepare('SELECT seq FROM audit_spool_marks').all(),
      [{ seq: 3 }],
      'the mark passed the receipts spooled again',
    );
    // Their chaining, after the spool write had counted them, counts nothing twice: a wait for a
    // later receipt handed over unspooled is not taken as ended already, and writes it to the spool.
    db.exec('BEGIN IMMEDIATE');
    writer.appendCovered(receipt(3));
    await handedOver();
    await writer.committed();
    assert.deepEqual(spooledEntries().slice(3), [[4, 'queue.message.enqueued', 'm-3']]);
    db.exec('COMMIT');
    await writer.close();
    assert.deepEqual(
      readdirSync(join(dir, `spool-${n}`)),
      [],
      'a clean close leaves no spool: every spooled entry counts as chained',
    );
    assert.deepEqual(errors, []);
    db.close();
  });

  /** A delivery's entry, which its checkpoint waits for (queue-workers.ts appends it covered). */
  const processed = (id: number) => ({
    tenant: 'acme',
    eventType: 'queue.message.processed',
    correlationId: `p-${id}`,
    payload: { flow: 'orders', id, outcome: 'succeeded' },
  });

  it('a checkpoint waiting soon (committedSoon) for covered entries ends on their chain, with no spool write', async () => {
    // Patience longer than any commit here (a loaded machine's included): the chain answers.
    const { writer, reader, db, spooledEntries, errors } = spooled(1, 10_000);
    writer.appendCovered(receipt(1));
    writer.appendCovered(processed(1));
    writer.appendCovered(receipt(2));
    writer.appendCovered(processed(2));
    await writer.committedSoon();
    assert.deepEqual(
      reader.latest('acme', 5).map((e) => e.correlationId),
      ['m-1', 'p-1', 'm-2', 'p-2'],
      'ended once every entry appended before it was chained, in order',
    );
    assert.deepEqual(spooledEntries(), [], 'no spool write: the chain answered the wait');
    await writer.close();
    assert.deepEqual(errors, []);
    db.close();
  });

  it('a wait soon while the chain cannot be written: after its patience the covered entries go to the spool and the wait ends on that write', async () => {
    const { writer, reader, db, spooledEntries, errors } = spooled(1);
    db.exec('BEGIN IMMEDIATE'); // the writer thread cannot commit
    writer.appendCovered(receipt(1));
    writer.appendCovered(processed(1));
    await handedOver();
    assert.deepEqual(spooledEntries(), [], 'handed over without a spool write');
    const started = performance.now();
    await writer.committedSoon();
    assert.ok(
      performance.now() - started >= PATIENCE_MS * 0.8,
      'not hurried before its patience (the default) was over',
    );
    assert.deepEqual(
      spooledEntries(),
      [
        [1, 'queue.message.enqueued', 'm-1'],
        [2, 'queue.message.processed', 'p-1'],
      ],
      'durable in the spool, under the numbers they were handed over with',
    );
    assert.equal(reader.count('acme'), 0, 'nothing chained: the wait ended on the spool write');
    db.exec('COMMIT');
    await writer.close();
    assert.deepEqual(
      reader.latest('acme', 5).map((e) => e.correlationId),
      ['m-1', 'p-1'],
      'each chained once',
    );
    assert.deepEqual(errors, []);
    db.close();
  });

  it('a wait soon does not hurry entries appended after it, and a hurried wait still writes the covered entries first', async () => {
    const { writer, reader, db, spooledEntries, errors } = spooled(60_000, 10_000);
    db.exec('BEGIN IMMEDIATE');
    writer.appendCovered(processed(1));
    let soonEnded = false;
    const soon = writer.committedSoon().then(() => (soonEnded = true));
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(soonEnded, false);
    assert.deepEqual(spooledEntries(), [], 'within its patience: nothing written, the timer is a minute away');
    // A dead letter's entry, waited for at once (its checkpoint goes before the next delivery).
    writer.append({ tenant: 'acme', eventType: 'queue.message.failed', correlationId: 'f-1' });
    await writer.committed();
    await soon;
    assert.deepEqual(
      spooledEntries().map(([seq, , id]) => [seq, id]),
      [
        [1, 'p-1'],
        [2, 'f-1'],
      ],
      'the hurried write carried the covered entry ahead of its own, and ended both waits',
    );
    assert.equal(reader.count('acme'), 0);
    db.exec('COMMIT');
    await writer.close();
    assert.equal(reader.count('acme'), 2);
    assert.deepEqual(errors, []);
    db.close();
  });

  it('a batch with an entry that is not a receipt is spooled whole, nothing waiting for it', async () => {
    const { writer, reader, db, spooledEntries } = spooled(1);
    db.exec('BEGIN IMMEDIATE');
    writer.appendCovered(receipt(1));
    writer.append({ tenant: 'acme', eventType: 'flow.deployed', correlationId: 'd-1' });
    writer.appendCovered(receipt(2));
    await handedOver();
    assert.deepEqual(
      spooledEntries().map(([seq, , id]) => [seq, id]),
      [
        [1, 'm-1'],
        [2, 'd-1'],
        [3, 'm-2'],
      ],
    );
    db.exec('COMMIT');
    await writer.close();
    assert.equal(reader.count('acme'), 3);
    db.close();
  });

  it('receipts alone that a wait follows at once are spooled like any entry', async () => {
    const { writer, reader, db, spooledEntries } = spooled(60_000);
    db.exec('BEGIN IMMEDIATE');
    writer.appendCovered(receipt(1));
    await writer.committed();
    assert.deepEqual(
      spooledEntries().map(([seq, , id]) => [seq, id]),
      [[1, 'm-1']],
    );
    assert.equal(reader.count('acme'), 0);
    db.exec('COMMIT');
    await writer.close();
    assert.equal(reader.count('acme'), 1);
    db.close();
  });

  it('a wait with nothing new after unspooled receipts writes them to the spool under the numbers they were handed over with', async () => {
    const { writer, reader, db, spoolDir, spooledEntries, errors } = spooled(1);
    db.exec('BEGIN IMMEDIATE');
    writer.append({ tenant: 'acme', eventType: 'flow.deployed', correlationId: 'd-1' });
    await writer.committed();
    writer.appendCovered(receipt(1));
    writer.appendCovered(receipt(2));
    await handedOver();
    await writer.committed();
    assert.deepEqual(
      spooledEntries().map(([seq, , id]) => [seq, id]),
      [
        [1, 'd-1'],
        [2, 'm-1'],
        [3, 'm-2'],
      ],
    );
    assert.equal(reader.count('acme'), 0, 'the wait ended on the spool write, not the chain');
    db.exec('COMMIT');
    await writer.flush();
    assert.deepEqual(db.prepare('SELECT seq FROM audit_spool_marks').all(), [{ seq: 3 }], 'the mark passed them');
    await writer.close();
    assert.deepEqual(readdirSync(spoolDir), [], 'every number given is chained: a clean close removes the spool');
    assert.equal(reader.count('acme'), 3);
    assert.deepEqual(errors, []);
    db.close();
  });

  it('receipts never written to the spool move its mark when chained, so a clean close removes it', async () => {
    const { writer, reader, db, spoolDir, spooledEntries } = spooled(1);
    writer.append({ tenant: 'acme', eventType: 'flow.deployed', correlationId: 'd-1' });
    await writer.committed();
    for (let id = 1; id <= 3; id++) writer.appendCovered(receipt(id));
    await writer.flush();
    assert.deepEqual(
      spooledEntries().map(([seq, , id]) => [seq, id]),
      [[1, 'd-1']],
    );
    assert.deepEqual(db.prepare('SELECT seq FROM audit_spool_marks').all(), [{ seq: 4 }]);
    await writer.close();
    assert.deepEqual(readdirSync(spoolDir), []);
    assert.equal(reader.count('acme'), 4);
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

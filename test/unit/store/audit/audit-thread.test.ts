/** AuditThreadWriter: entries queued on the calling thread reach the chain through the worker, in order. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { waitFor } from '../../../helpers/wait.js';
import { SqliteAuditStore } from '../../../../src/store/sqlite/sqlite-audit-store.js';
import { AuditThreadWriter } from '../../../../src/store/audit/audit-thread.js';
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
});

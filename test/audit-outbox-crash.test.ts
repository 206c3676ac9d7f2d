/**
 * The queue's outbox across a kill -9, black-box. On files a 202 of /enqueue waits for the
 * message's synced write alone: its record carries what its `queue.message.enqueued` entry says
 * (docs/queue-format.md), and the entry is written after. Here a server acknowledges while audit.db
 * is locked (nothing can be chained), is killed, and its spool is removed, as if the kill had come
 * before the spool's write: only the records are left. Whoever reads them next (the next server's
 * worker, `svc audit --verify`, `svc store migrate`) chains each entry from its record, exactly
 * once, and the worker does so before the delivery's own entry.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { statePaths } from '../src/common/paths.js';
import { LockFile } from '../src/queue/coordination/lock-file.js';
import { consumerLockOptions, queuePaths } from '../src/queue/file/queue-paths.js';
import { flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { acknowledgedAll, lockAuditDb } from './helpers/audit-locked.js';
import { verifyMigratedCopy } from './helpers/migrated-copy.js';
import { deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, onlyOn, startServer, svc, type Sandbox } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const SKIP = onlyOn('sqlite', 'the outbox is the file queue’s (PostgreSQL commits the entry with the message)');
const COUNT = 40;
const SINK = flowSource('sink', [], '## Step: answer\n```ntd\n{"ok": true}\n```\n');

interface EntryRow {
  seq: number;
  event_type: string;
  correlation_id: string;
  payload: string;
}

function queueEntries(sandbox: Sandbox): EntryRow[] {
  const db = new Database(statePaths(sandbox.db).auditDb, { readonly: true });
  try {
    return db
      .prepare(
        "SELECT seq, event_type, correlation_id, payload FROM audit_entries WHERE tenant = 'acme' AND event_type LIKE 'queue.message.%' ORDER BY seq",
      )
      .all() as EntryRow[];
  } finally {
    db.close();
  }
}

/** How many `event` entries each of `ids` has. */
function countsOf(sandbox: Sandbox, event: string, ids: readonly string[]): number[] {
  const rows = queueEntries(sandbox).filter((r) => r.event_type === event);
  return ids.map((id) => rows.filter((r) => r.correlation_id === id).length);
}

/** Runs a server on the sandbox until each of `ids` has its delivery's entry, then stops it cleanly. */
async function serveUntilDelivered(sandbox: Sandbox, ids: readonly string[]): Promise<void> {
  const server = await startServer(sandbox);
  try {
    await waitFor(
      `${ids.length} deliveries chained`,
      () => countsOf(sandbox, 'queue.message.processed', ids).every((n) => n >= 1),
      30_000,
      50,
    );
  } finally {
    assert.equal(await server.stop(), 0);
  }
}

describe('the queue outbox across a kill -9 (the entry of a 202 chained from its record)', { skip: SKIP }, () => {
  const sandboxes: Sandbox[] = [];
  after(() => sandboxes.forEach((s) => s.cleanup()));

  /** COUNT acknowledgements of a server killed before any of their entries was chained or spooled. */
  async function acknowledgedThenKilled(): Promise<{ sandbox: Sandbox; ids: string[]; offsets: number[] }> {
    const sandbox = makeSandbox();
    sandboxes.push(sandbox);
    const key = tenantWithKey(sandbox);
    deployFlow(sandbox, SINK);
    // The queue's worker lock is this test's: the server's worker never reads the records, so no
    // delivery of theirs is checkpointed past them (its progress would wait for their entries).
    const queue = queuePaths(statePaths(sandbox.db).queuesDir, 'acme', 'sink');
    mkdirSync(queue.dir, { recursive: true });
    const workerLock = await LockFile.tryAcquire(queue.consumerLock, consumerLockOptions(queue));
    assert.ok(workerLock !== undefined);
    const first = await startServer(sandbox);
    const ids = Array.from({ length: COUNT }, (_, i) => `outbox-${i}`);
    let offsets: number[] = [];
    const lock = lockAuditDb(sandbox);
    try {
      const answers = await acknowledgedAll(first.url, key, ids);
      offsets = answers.map((a) => (JSON.parse(a.text) as { offset: number }).offset);
      assert.equal(new Set(offsets).size, COUNT, 'each acknowledgement names its own offset');
    } finally {
      await first.kill9();
      lock.exec('ROLLBACK');
      lock.close();
      await workerLock.release();
    }
    // The kill came, as far as the chain knows, before the spool's write too.
    const spoolDir = statePaths(sandbox.db).auditSpoolDir;
    if (existsSync(spoolDir)) for (const f of readdirSync(spoolDir)) rmSync(join(spoolDir, f));
    assert.deepEqual(
      countsOf(sandbox, 'queue.message.enqueued', ids),
      ids.map(() => 0),
      'nothing chained yet',
    );
    return { sandbox, ids, offsets };
  }

  it('the next server’s worker chains each entry from its record, once, before the delivery’s own entry', async () => {
    const { sandbox, ids, offsets } = await acknowledgedThenKilled();
    await serveUntilDelivered(sandbox, ids);
    assert.deepEqual(
      countsOf(sandbox, 'queue.message.enqueued', ids),
      ids.map(() => 1),
    );
    const rows = queueEntries(sandbox);
    for (const [i, id] of ids.entries()) {
      const enqueued = rows.find((r) => r.event_type === 'queue.message.enqueued' && r.correlation_id === id)!;
      const processed = rows.find((r) => r.event_type === 'queue.message.processed' && r.correlation_id === id)!;
      assert.ok(enqueued.seq < processed.seq, `${id}: its acknowledgement is chained before its delivery`);
      const p = JSON.parse(enqueued.payload) as Record<string, unknown>;
      assert.deepEqual(Object.keys(p).sort(), ['flow', 'id', 'offset', 'source']);
      assert.equal(p.flow, 'sink');
      assert.equal(p.source, 'enqueue');
      assert.equal(p.offset, offsets[i], `${id}: the offset its 202 named`);
    }
    const verify = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /audit chain of tenant acme: OK/);
    assert.doesNotMatch(verify.stdout, /chained first/, 'the worker chained them all');
  });

  it('svc audit --verify before any restart chains them from the records first, once, then finds every entry', async () => {
    const { sandbox, ids } = await acknowledgedThenKilled();
    const verify = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(
      verify.stdout,
      new RegExp(
        `^chained first: ${COUNT} queue.message.enqueued entries carried by the records of acknowledged messages`,
        'm',
      ),
    );
    assert.match(verify.stdout, /queue entries of tenant acme: OK \(40 held messages/);
    assert.deepEqual(
      countsOf(sandbox, 'queue.message.enqueued', ids),
      ids.map(() => 1),
    );
    const again = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.doesNotMatch(again.stdout, /chained first/);
    // And a server started afterwards reads the records again: nothing is chained twice.
    await serveUntilDelivered(sandbox, ids);
    assert.deepEqual(
      countsOf(sandbox, 'queue.message.enqueued', ids),
      ids.map(() => 1),
    );
  });

  it('svc store migrate chains them from the records first: the copy on PostgreSQL has every entry', async () => {
    const { sandbox, ids } = await acknowledgedThenKilled();
    const verified = await verifyMigratedCopy(sandbox, 'svcoutbox');
    assert.deepEqual(
      countsOf(sandbox, 'queue.message.enqueued', ids),
      ids.map(() => 1),
    );
    assert.match(verified, /queue entries of tenant acme: OK \(40 held messages/);
  });
});

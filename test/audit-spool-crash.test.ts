/**
 * The audit spool across a kill -9, black-box. With audit.db's write lock held by this test, nothing
 * can be chained, yet every submission is acknowledged (its `queue.message.enqueued` entry durable
 * in its queue record), and the entries reach the server's spool (one synced write) when the
 * worker's checkpoint waits for them; the server is then killed, and the next server on the state
 * directory chains what the dead one left spooled, each entry exactly once, the chain intact. A
 * server that stops cleanly leaves no spool behind.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { statePaths } from '../src/common/paths.js';
import { readSpool } from '../src/store/audit/audit-spool.js';
import { waitFor } from './helpers/wait.js';
import { enqueue, flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { verifyMigratedCopy } from './helpers/migrated-copy.js';
import { acknowledgedAll, lockAuditDb } from './helpers/audit-locked.js';
import { deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, onlyOn, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';

const SKIP = onlyOn(
  'sqlite',
  "the audit spool is the state directory's (PostgreSQL commits the entry with the message)",
);
const COUNT = 40;

/** A one-step flow: its worker delivers the messages, and its checkpoint waits for their entries. */
const SINK = flowSource('sink', [], '## Step: answer\n```ntd\n{"ok": true}\n```\n');

function spoolFiles(sandbox: Sandbox): string[] {
  const dir = statePaths(sandbox.db).auditSpoolDir;
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.spool')) : [];
}

/** Correlation ids of the `queue.message.enqueued` entries in the sandbox's spool files. */
function spooledReceipts(sandbox: Sandbox): Set<string> {
  const dir = statePaths(sandbox.db).auditSpoolDir;
  return new Set(
    spoolFiles(sandbox).flatMap((f) =>
      readSpool(join(dir, f))
        .filter((s) => s.entry.eventType === 'queue.message.enqueued')
        .map((s) => s.entry.correlationId),
    ),
  );
}

/** Correlation ids of the chain's `queue.message.enqueued` entries, with their counts. */
function enqueuedEntries(sandbox: Sandbox): Map<string, number> {
  const db = new Database(statePaths(sandbox.db).auditDb, { readonly: true });
  try {
    const rows = db
      .prepare(
        "SELECT correlation_id FROM audit_entries WHERE tenant = 'acme' AND event_type = 'queue.message.enqueued'",
      )
      .all() as { correlation_id: string }[];
    const out = new Map<string, number>();
    for (const r of rows) out.set(r.correlation_id, (out.get(r.correlation_id) ?? 0) + 1);
    return out;
  } finally {
    db.close();
  }
}

describe('the audit spool across a kill -9', { skip: SKIP }, () => {
  const sandboxes: Sandbox[] = [];
  after(() => sandboxes.forEach((s) => s.cleanup()));

  /** A server that acknowledged COUNT submissions while audit.db was locked, then was killed: its entries are only spooled. */
  async function killedWithSpooledEntries(): Promise<{ sandbox: Sandbox; ids: string[] }> {
    return spooledWhileLocked((server) => server.kill9());
  }

  /** As killedWithSpooledEntries, ending the server's part with `end` while audit.db is still locked. */
  async function spooledWhileLocked(
    end: (server: ServerProcess, sandbox: Sandbox) => Promise<void>,
  ): Promise<{ sandbox: Sandbox; ids: string[]; first: ServerProcess }> {
    const sandbox = makeSandbox();
    sandboxes.push(sandbox);
    const key = tenantWithKey(sandbox);
    deployFlow(sandbox, SINK);
    const first = await startServer(sandbox);
    const ids = Array.from({ length: COUNT }, (_, i) => `spooled-${i}`);
    const lock = lockAuditDb(sandbox);
    try {
      await acknowledgedAll(first.url, key, ids);
      assert.equal(spoolFiles(sandbox).length, 1, 'the entries wait in the server’s spool');
      // Each acknowledgement's entry is durable in its queue record; the worker's checkpoint, asked
      // in the background and answered by no chain while audit.db is locked, has them spooled once
      // its patience is over (AuditAppender.committedSoon). What is tested here is that spool.
      await waitFor('every acknowledged entry spooled', () => ids.every((id) => spooledReceipts(sandbox).has(id)));
      await end(first, sandbox);
    } catch (err) {
      // A failed setup must not leave the server running (the test file would never end).
      first.child.kill('SIGCONT');
      await first.kill9();
      throw err;
    } finally {
      lock.exec('ROLLBACK');
      lock.close();
    }
    assert.equal(enqueuedEntries(sandbox).size, 0, 'the server chained none of them');
    assert.equal(spoolFiles(sandbox).length, 1, 'its spool is left behind');
    return { sandbox, ids, first };
  }

  /** Waits until log.db holds `count` rows of `event` (the writer commits every 100 ms). */
  /** log.db's rows of `event`, or all its rows, read from a connection of its own. */
  function countEventRows(sandbox: Sandbox, event?: string): number {
    const db = new Database(statePaths(sandbox.db).logDb, { readonly: true });
    try {
      db.pragma('busy_timeout = 2000');
      const row =
        event === undefined
          ? db.prepare('SELECT count(*) AS n FROM events').get()
          : db.prepare('SELECT count(*) AS n FROM events WHERE event = ?').get(event);
      return (row as { n: number }).n;
    } finally {
      db.close();
    }
  }

  async function eventRowsWritten(sandbox: Sandbox, event: string, count: number): Promise<void> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const rows = countEventRows(sandbox, event);
      if (rows >= count) return;
      if (Date.now() > deadline) assert.fail(`log.db holds ${rows} ${event} rows, ${count} expected`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Waits until log.db's row count has not moved for 600 ms (the writer commits every 100 ms while it has rows). */
  async function eventLogIdle(sandbox: Sandbox): Promise<void> {
    const deadline = Date.now() + 15_000;
    let last = -1;
    let since = Date.now();
    for (;;) {
      const rows = countEventRows(sandbox);
      if (rows !== last) {
        last = rows;
        since = Date.now();
      } else if (Date.now() - since >= 600) return;
      if (Date.now() > deadline) assert.fail(`log.db still growing after 15 s (${rows} rows)`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  function assertEachChainedOnce(sandbox: Sandbox, ids: readonly string[]): void {
    const chained = enqueuedEntries(sandbox);
    assert.deepEqual(
      ids.filter((id) => chained.get(id) !== 1),
      [],
      'every acknowledged message has exactly one queue.message.enqueued entry',
    );
  }

  it('acknowledges while audit.db cannot be written; the next server chains every spooled entry once', async () => {
    const { sandbox, ids } = await killedWithSpooledEntries();
    const second = await startServer(sandbox);
    try {
      assertEachChainedOnce(sandbox, ids);
      assert.equal(spoolFiles(sandbox).length, 1, 'the dead server’s spool is removed (the new server has its own)');
      const told = /chained (\d+) entries left spooled by 1 stopped process/.exec(second.output() + second.stderr());
      assert.ok(told !== null && Number(told[1]) >= COUNT, 'the operator is told what was chained');
      const verify = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      assert.match(verify.stdout, /queue entries of tenant acme: OK/);
      assert.doesNotMatch(verify.stdout, /chained first/, 'the server chained them at its start');
    } finally {
      assert.equal(await second.stop(), 0);
    }
    assert.deepEqual(spoolFiles(sandbox), [], 'a clean stop leaves no spool');
    assert.equal(enqueuedEntries(sandbox).size, COUNT, 'and the restart chained nothing twice');
  });

  it('svc audit --verify before any restart chains the dead server’s spool first, then finds every entry', async () => {
    const { sandbox, ids } = await killedWithSpooledEntries();
    const verify = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /^chained first: \d+ audit entries left spooled by 1 stopped server process\(es\)$/m);
    assert.match(verify.stdout, /queue entries of tenant acme: OK/);
    assertEachChainedOnce(sandbox, ids);
    assert.deepEqual(spoolFiles(sandbox), []);
    const again = svc(sandbox, ['audit', '--tenant', 'acme', '--verify', '--db', sandbox.db]);
    assert.doesNotMatch(again.stdout, /chained first/);
    assertEachChainedOnce(sandbox, ids);
  });

  it('svc store migrate of a killed server’s state directory chains its spool first: the copy on PostgreSQL has every entry', async () => {
    const { sandbox, ids } = await killedWithSpooledEntries();
    const verified = await verifyMigratedCopy(sandbox, 'svcspool');
    assertEachChainedOnce(sandbox, ids);
    assert.match(verified, /queue entries of tenant acme: OK/);
    const count = /audit chain of tenant acme: OK \((\d+) entries verified/.exec(verified);
    assert.ok(count !== null && Number(count[1]) > COUNT, 'the spooled entries are in the copied chain');
  });

  it('a paused server’s spool (SIGSTOP) is not recovered under it by another server; resumed, it chains its own, each entry once', async () => {
    const { sandbox, ids, first } = await spooledWhileLocked(async (server, at) => {
      // Paused only once its event log is idle: a server frozen in the middle of a log.db commit
      // holds that file's lock, and no other process could open the log until it resumed (SQLite's
      // own rule, not the spool's; seen once in a full CI run).
      await eventRowsWritten(at, 'queue_enqueued', COUNT);
      // The worker's deliveries go on writing rows after the enqueued ones: wait for the writer to
      // have nothing left to commit (seen in a CI run: paused mid-commit, the next boot met a
      // locked log.db).
      await eventLogIdle(at);
      server.child.kill('SIGSTOP');
    });
    let second: ServerProcess | undefined;
    try {
      second = await startServer(sandbox);
      assert.equal(enqueuedEntries(sandbox).size, 0, 'the live (paused) server’s spool was left alone');
      assert.equal(spoolFiles(sandbox).length, 2, 'its spool and the new server’s');
      first.child.kill('SIGCONT');
      assert.equal(await first.stop(), 0);
      assertEachChainedOnce(sandbox, ids);
      assert.equal(await second.stop(), 0);
      assertEachChainedOnce(sandbox, ids);
      assert.deepEqual(spoolFiles(sandbox), []);
    } finally {
      first.child.kill('SIGCONT');
      await first.stop();
      await second?.stop();
    }
  });

  it('a clean stop right after the acknowledgements chains them all and removes the spool', async () => {
    const sandbox = makeSandbox();
    sandboxes.push(sandbox);
    const key = tenantWithKey(sandbox);
    deployFlow(sandbox, SINK);
    const server = await startServer(sandbox);
    const ids = Array.from({ length: 10 }, (_, i) => `clean-${i}`);
    for (const id of ids)
      assert.equal((await enqueue(server.url, 'sink', '{}', { key, correlationId: id })).status, 202);
    assert.equal(await server.stop(), 0);
    assert.deepEqual(spoolFiles(sandbox), []);
    const chained = enqueuedEntries(sandbox);
    assert.deepEqual(
      ids.map((id) => chained.get(id)),
      ids.map(() => 1),
    );
  });
});

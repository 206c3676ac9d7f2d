// The PostgreSQL queue's own behaviours beyond the shared conformance suite: several nodes on one
// database, a node's death, group commit.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminQuery, freshPgSchema, type PgSchema } from '../../../helpers/pg.js';
import { sleep, waitFor } from '../../../helpers/wait.js';
import { StorageUnavailableError } from '../../../../src/common/errors.js';
import { openPgStore, type PgStore } from '../../../../src/store/pg/pg-store.js';
import type { QueueMessage } from '../../../../src/queue/contract.js';
import { advisoryLockKey } from '../../../../src/queue/coordination/node-lease.js';
import { queueLockName } from '../../../../src/queue/pg/pg-queue-consumer.js';
import { PgQueueStore } from '../../../../src/queue/pg/pg-queue-store.js';

let schema: PgSchema;
const stores: PgStore[] = [];
const queues: PgQueueStore[] = [];
async function node(leaseMs = 10_000): Promise<PgQueueStore> {
  const s = await openPgStore(schema.url, { maxConnections: 4 });
  stores.push(s);
  const q = new PgQueueStore(s.db, { lease: { leaseMs, heartbeatMs: Math.min(1000, leaseMs / 4) } });
  queues.push(q);
  return q;
}
const policy = { maxAttempts: 3, initialDelayMs: 20, backoffFactor: 1, maxDelayMs: 20 };

before(async () => (schema = await freshPgSchema()));
after(async () => {
  for (const q of queues) await q.close().catch(() => undefined);
  for (const s of stores) await s.close();
  await schema.drop();
});

test('appends get increasing ids; a worker delivers them in id order and acknowledged messages are deleted', async () => {
  const q = await node();
  const ids = await Promise.all(
    Array.from({ length: 50 }, (_, i) => q.append('acme', 'orders', { correlationId: `c${i}`, payload: { i } })),
  );
  assert.deepEqual(
    ids.map((r) => r.id),
    Array.from({ length: 50 }, (_, i) => i + 1),
  );
  const seen: QueueMessage[] = [];
  const c = await q.startConsumer('acme', 'orders', {
    handler: async (m) => (seen.push(m), { kind: 'ack' }),
    pollIntervalMs: 50,
  });
  assert.ok(c);
  for (let i = 50; i < 80; i++) await q.append('acme', 'orders', { correlationId: `c${i}`, payload: { i } });
  await waitFor('80 delivered', () => seen.length === 80, 5000, 10);
  assert.deepEqual(
    seen.map((m) => m.id),
    Array.from({ length: 80 }, (_, i) => i + 1),
  );
  assert.deepEqual(seen[3]!.payload, { i: 3 });
  assert.equal(seen[3]!.correlationId, 'c3');
  await q.stopConsumer('acme', 'orders');
  const left = await adminQuery(`SELECT count(*)::int AS n FROM ${schema.name}.queue_messages WHERE flow = 'orders'`);
  assert.equal(left.rows[0]!.n, 0);
  const stats = await q.stats('acme', 'orders');
  assert.deepEqual([stats.total, stats.pending, stats.processed], [80, 0, 80]);
});

test('retries then a dead letter; replay delivers it again under a new id', async () => {
  const q = await node();
  let fail = true;
  const seen: QueueMessage[] = [];
  const dead: number[] = [];
  const steps: (string | undefined)[] = [];
  await q.startConsumer('acme', 'flaky', {
    handler: async (m) => (
      seen.push(m),
      fail ? { kind: 'retry', error: 'boom', policy, step: `post${m.attempt}` } : { kind: 'ack' }
    ),
    onAttemptFailed: (f) => steps.push(f.step),
    onDeadLettered: (d) => (dead.push(d.message.id), steps.push(`dead:${d.step}`)),
    pollIntervalMs: 50,
  });
  const { id } = await q.append('acme', 'flaky', { correlationId: 'x', payload: 'p' });
  await waitFor('dead-lettered', () => dead.length === 1, 5000, 10);
  assert.deepEqual(
    seen.map((m) => [m.attempt, m.isRetry]),
    [
      [1, false],
      [2, true],
      [3, true],
    ],
  );
  assert.deepEqual(steps, ['post1', 'post2', 'post3', 'dead:post3'], 'each report names the step the outcome named');
  const dl = await q.listDeadLetters({ tenant: 'acme' });
  assert.deepEqual(
    dl.map((d) => [d.flow, d.id, d.attempts, d.last_error, d.payload]),
    [['flaky', id, 3, 'boom', 'p']],
  );
  fail = false;
  const r = await q.replayDeadLetter('acme', 'flaky', id, 'again');
  assert.ok(r.message.id > id);
  await waitFor(
    'replayed delivered',
    () => seen.some((m) => m.id === r.message.id && m.correlationId === 'again' && m.attempt === 1),
    5000,
    10,
  );
  assert.deepEqual(await q.listDeadLetters({ tenant: 'acme', flow: 'flaky' }), []);
  await assert.rejects(q.replayDeadLetter('acme', 'flaky', id), { code: 'SVC_ERR_NOT_FOUND' });
});

test('one worker per queue across nodes; a dead node hands its queue over with nothing lost', async () => {
  const a = await node(1500);
  const b = await node(1500);
  const byA: number[] = [];
  const byB: number[] = [];
  let hold: (() => void) | undefined;
  assert.ok(
    await a.startConsumer('acme', 'shared', {
      handler: async (m) => (
        byA.push(m.id),
        m.id === 3 ? await new Promise<void>((r) => (hold = r)) : undefined,
        { kind: 'ack' }
      ),
      pollIntervalMs: 50,
    }),
  );
  assert.equal(await b.startConsumer('acme', 'shared', { handler: async () => ({ kind: 'ack' }) }), undefined);
  assert.equal(await b.consumedElsewhere('acme', 'shared'), true);
  for (let i = 0; i < 10; i++) await b.append('acme', 'shared', { correlationId: `s${i}`, payload: i });
  await waitFor('A reaches message 3', () => byA.includes(3), 5000, 10);
  // Node A's lease session dies (as when its process is killed): its lock is released at once.
  // Only this schema's lock of this queue: other tests and nodes share the server.
  const k = advisoryLockKey(schema.name, queueLockName('acme', 'shared'));
  const killed = await adminQuery(
    `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2 AND objsubid = 1`,
    [k.classid, k.objid],
  );
  assert.ok((killed.rowCount ?? 0) >= 1);
  await waitFor(
    'B takes the queue over',
    async () =>
      (await b.startConsumer('acme', 'shared', {
        handler: async (m) => (byB.push(m.id), { kind: 'ack' }),
        pollIntervalMs: 50,
      })) !== undefined,
    5000,
    50,
  );
  hold?.();
  await waitFor('B delivered the rest', () => byB.includes(10), 5000, 10);
  // Every message was delivered at least once (one A finished after losing its lease is
  // acknowledged by A, or delivered again by B), and none is left.
  assert.deepEqual(
    [...new Set([...byA, ...byB])].sort((x, y) => x - y),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  await b.stopConsumer('acme', 'shared');
  assert.equal(
    (await adminQuery(`SELECT count(*)::int AS n FROM ${schema.name}.queue_messages WHERE flow = 'shared'`)).rows[0]!.n,
    0,
  );
});

test('concurrent appends from three nodes to one queue: ids distinct and gapless', async () => {
  const ns = [await node(), await node(), await node()];
  const results = await Promise.all(
    ns.flatMap((n, k) =>
      Array.from({ length: 100 }, (_, i) => n.append('acme', 'busy', { correlationId: `${k}-${i}`, payload: i })),
    ),
  );
  const ids = results.map((r) => r.id).sort((x, y) => x - y);
  assert.deepEqual(
    ids,
    Array.from({ length: 300 }, (_, i) => i + 1),
  );
});

test('a retry or dead letter that cannot be written (a full disk) is held, then written once the store takes writes again: nothing stranded, no second run', async () => {
  const q = await node();
  const s = schema.name;
  // While `disk.is_full` is set, a retry's UPDATE and a dead letter's INSERT fail with the SQLSTATE of a
  // full disk (53100, what a relation that cannot grow raises); the appends still go in.
  await adminQuery(`CREATE TABLE ${s}.disk (is_full boolean NOT NULL)`);
  await adminQuery(`INSERT INTO ${s}.disk VALUES (true)`);
  await adminQuery(`CREATE FUNCTION ${s}.disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF (SELECT is_full FROM ${s}.disk) THEN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END IF;
    RETURN NEW; END $$`);
  await adminQuery(
    `CREATE TRIGGER disk_full BEFORE UPDATE ON ${s}.queue_messages FOR EACH ROW WHEN (NEW.flow = 'full') EXECUTE FUNCTION ${s}.disk_full()`,
  );
  await adminQuery(
    `CREATE TRIGGER disk_full BEFORE INSERT ON ${s}.queue_dead_letters FOR EACH ROW WHEN (NEW.flow = 'full') EXECUTE FUNCTION ${s}.disk_full()`,
  );
  const calls: string[] = [];
  const errors: string[] = [];
  const dead: string[] = [];
  const once = { ...policy, maxAttempts: 1 };
  await q.startConsumer('acme', 'full', {
    // `retry` is refused once, `dead` dies at once, `ok` is acknowledged.
    handler: async (m) => (
      calls.push(`${m.correlationId}#${m.attempt}`),
      m.correlationId === 'retry' && m.attempt === 1
        ? { kind: 'retry', error: 'once', policy }
        : m.correlationId === 'dead'
          ? { kind: 'retry', error: 'dies', policy: once }
          : { kind: 'ack' }
    ),
    onDeadLettered: (d) => dead.push(d.message.correlationId),
    onError: (err) => errors.push((err as { code?: string }).code ?? String(err)),
    pollIntervalMs: 50,
  });
  for (const cid of ['retry', 'dead', 'ok']) await q.append('acme', 'full', { correlationId: cid, payload: cid });
  await waitFor('the retry refused a few times', () => errors.length >= 3, 5000, 10);
  // Held: nothing after the message whose outcome is not written is delivered, and it does not run again.
  assert.deepEqual(calls, ['retry#1']);
  assert.ok(
    errors.every((code) => code === '53100'),
    errors.join(),
  );
  await adminQuery(`UPDATE ${s}.disk SET is_full = false`);
  await waitFor('every message settled', () => calls.length === 4 && dead.length === 1, 5000, 10);
  assert.deepEqual(calls, ['retry#1', 'retry#2', 'dead#1', 'ok#1']);
  await adminQuery(`UPDATE ${s}.disk SET is_full = true`);
  await q.append('acme', 'full', { correlationId: 'dead', payload: 'again' });
  await waitFor('the dead letter refused a few times', () => errors.length >= 8, 5000, 10);
  assert.deepEqual(calls, ['retry#1', 'retry#2', 'dead#1', 'ok#1', 'dead#1']);
  await adminQuery(`UPDATE ${s}.disk SET is_full = false`);
  await waitFor('the second dead letter written', () => dead.length === 2, 5000, 10);
  await q.stopConsumer('acme', 'full');
  assert.equal(calls.length, 5, 'each handler ran once per attempt');
  assert.deepEqual(
    (await q.listDeadLetters({ tenant: 'acme', flow: 'full' })).map((d) => d.payload),
    ['dead', 'again'],
  );
  assert.equal(
    (await adminQuery(`SELECT count(*)::int AS n FROM ${s}.queue_messages WHERE flow = 'full'`)).rows[0]!.n,
    0,
  );
});

test("a node paused in the middle of an append holds up the other nodes' appends to the queue for its lease at most, and its batch is not acknowledged", async () => {
  const LEASE_MS = 1000;
  const paused = await openPgStore(schema.url, { maxConnections: 2, idleInTransactionTimeoutMs: LEASE_MS });
  stores.push(paused);
  const other = await node();
  const first = await other.append('acme', 'held', { correlationId: 'before', payload: 0 });
  // The paused node's batch as the server sees it: the queue's id counter locked, then nothing more
  // (a SIGSTOP, or a network cut, between two statements of the transaction).
  let locked!: () => void;
  const counterLocked = new Promise<void>((r) => (locked = r));
  const pausedBatch = paused.db.transaction(async (tx) => {
    await tx.query("UPDATE queue_heads SET next_id = next_id + 1 WHERE tenant = 'acme' AND flow = 'held'");
    locked();
    // On purpose: the pause itself, four leases long.
    await sleep(4 * LEASE_MS);
    await tx.query('SELECT 1');
  });
  await counterLocked;
  const started = performance.now();
  const appended = await other.append('acme', 'held', { correlationId: 'while-paused', payload: 1 });
  const heldUpMs = performance.now() - started;
  assert.ok(
    heldUpMs < 3 * LEASE_MS,
    `the other node's append waited ${Math.round(heldUpMs)} ms (lease ${LEASE_MS} ms)`,
  );
  assert.ok(appended.id > first.id);
  await assert.rejects(
    pausedBatch,
    StorageUnavailableError,
    'the paused batch was ended by the server: nothing of it is acknowledged',
  );
  // The pool threw the ended connection away: the paused node's next batch goes through.
  const resumed = new PgQueueStore(paused.db);
  queues.push(resumed);
  assert.ok((await resumed.append('acme', 'held', { correlationId: 'after', payload: 2 })).id > appended.id);
});

import assert from 'node:assert/strict';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { encodeFrame } from '../../../../src/queue/file/frame.js';
import { scanFile } from '../../../../src/queue/file/file-io.js';
import { FdFile } from '../../../../src/queue/file/fd-file.js';
import { waitFor } from '../../../helpers/wait.js';
import { FileQueueStore } from '../../../../src/queue/file/file-queue-store.js';
import type { Outcome, QueueMessage, QueuedReceipt, RetryPolicy } from '../../../../src/queue/contract.js';
import type { SegmentRecord } from '../../../../src/queue/file/segment-record.js';

const dirs: string[] = [];
function tempQueues(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-queue-'));
  dirs.push(d);
  return join(d, 'queues');
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const FAST: RetryPolicy = { maxAttempts: 3, initialDelayMs: 10, backoffFactor: 2, maxDelayMs: 1000 };

/** Consumes until `until` says stop (bounded at 5 s), collecting deliveries. */
async function consume(
  store: FileQueueStore,
  tenant: string,
  flow: string,
  decide: (m: QueueMessage) => Outcome,
  until: (seen: QueueMessage[]) => boolean,
  extra: { onDead?: (id: number, cid: string) => void } = {},
): Promise<QueueMessage[]> {
  const seen: QueueMessage[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const c = await store.startConsumer(tenant, flow, {
    pollIntervalMs: 10,
    handler: async (m) => {
      seen.push(m);
      const o = decide(m);
      if (until(seen)) setImmediate(done);
      return o;
    },
    onDeadLettered: (d) => extra.onDead?.(d.message.id, d.message.correlationId),
  });
  assert.ok(c, 'consumer started');
  const timer = setTimeout(done, 5000);
  await finished;
  clearTimeout(timer);
  await store.stopConsumer(tenant, flow);
  return seen;
}

/**
 * A queue `acme/<flow>` whose worker, in the appending process, has delivered one message and
 * waits for more: the state in which committed batches are handed to it in place.
 */
async function caughtUpWorker(
  flow: string,
): Promise<{ store: FileQueueStore; seen: QueueMessage[]; seenCount: (n: number) => Promise<void> }> {
  const store = new FileQueueStore({ queuesDir: tempQueues() });
  const seen: QueueMessage[] = [];
  const seenCount = async (n: number) => {
    for (let i = 0; i < 200 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 5));
  };
  await store.append('acme', flow, { correlationId: 'c0', payload: 0 });
  await store.startConsumer('acme', flow, {
    pollIntervalMs: 10_000,
    handler: async (m) => (seen.push(m), { kind: 'ack' }),
  });
  await seenCount(1);
  return { store, seen, seenCount };
}

describe('queue store', () => {
  it('append resolves with increasing offsets and ids, and concurrent appends share a batch', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, n) => store.append('acme', 'orders', { correlationId: `c${n}`, payload: { n } })),
    );
    assert.deepEqual(
      results.map((r) => r.id),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(results[0]!.byteOffset, 0);
    for (let i = 1; i < results.length; i++) assert.ok(results[i]!.byteOffset > results[i - 1]!.byteOffset);
    const scan = await scanFile<SegmentRecord>(store.paths('acme', 'orders').segment);
    assert.deepEqual(
      scan.frames.map((f) => f.offset),
      results.map((r) => r.byteOffset),
    );
    assert.deepEqual(scan.frames[3]!.value, {
      id: 4,
      correlation_id: 'c3',
      enqueued_at: scan.frames[3]!.value.enqueued_at,
      attempts: 0,
      payload: { n: 3 },
    });
    await store.close();
  });

  it('refuses a tenant or flow breaking the name rule before touching the disk', async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    await assert.rejects(store.append('Acme', 'orders', { correlationId: 'c', payload: 1 }), {
      code: 'SVC_ERR_INVALID_NAME',
    });
    await assert.rejects(store.append('acme', '../x', { correlationId: 'c', payload: 1 }), {
      code: 'SVC_ERR_INVALID_NAME',
    });
    assert.equal(existsSync(queuesDir), false);
    await store.close();
  });

  it('cuts a torn tail on open: garbage or half a record at the end is dropped, later appends are readable', async () => {
    const queuesDir = tempQueues();
    let store = new FileQueueStore({ queuesDir });
    for (let n = 0; n < 3; n++) await store.append('acme', 'torn', { correlationId: `c${n}`, payload: { n } });
    await store.close();
    const seg = store.paths('acme', 'torn').segment;
    const good = statSync(seg).size;
    const half = encodeFrame({ id: 99, correlation_id: 'x', enqueued_at: 'x', attempts: 0, payload: 'half' });
    appendFileSync(seg, half.subarray(0, half.length - 5));
    appendFileSync(seg, 'garbage');
    store = new FileQueueStore({ queuesDir });
    const r = await store.append('acme', 'torn', { correlationId: 'c3', payload: { n: 3 } });
    assert.equal(r.byteOffset, good, 'the torn tail was truncated before the new record');
    const seen = await consume(
      store,
      'acme',
      'torn',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 4,
    );
    assert.deepEqual(
      seen.map((m) => (m.payload as { n: number }).n),
      [0, 1, 2, 3],
    );
    await store.close();
  });

  it('a consumer cuts a torn tail it finds past its position', async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    await store.append('acme', 'torn2', { correlationId: 'c', payload: 1 });
    // A writer that died mid-record, once the appender has let go of the append lock (it keeps it
    // a moment after a batch, and a held lock means a write may still be in progress).
    await waitFor('the append lock released', () => !existsSync(store.paths('acme', 'torn2').appendLock), 5000, 5);
    appendFileSync(store.paths('acme', 'torn2').segment, Buffer.from([0x51, 0x53, 0x46, 0x31, 9, 9]));
    const seen = await consume(
      store,
      'acme',
      'torn2',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 1,
    );
    assert.equal(seen.length, 1);
    const scan = await waitFor(
      'the torn tail cut',
      async () => {
        const s = await scanFile(store.paths('acme', 'torn2').segment);
        return s.stop === 'end' && s;
      },
      5000,
      10,
    );
    assert.equal(scan.stop, 'end');
    await store.close();
  });

  it('a worker draining a backlog lets the event loop turn every deliveriesPerTurn messages', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        store.append('acme', 'backlog', { correlationId: `c${n}`, payload: { n } }),
      ),
    );
    // Deliveries in a row with no event-loop turn between them (a setImmediate ticker resets it).
    let inARow = 0;
    let longest = 0;
    let draining = true;
    const tick = (): void => {
      inARow = 0;
      if (draining) setImmediate(tick);
    };
    setImmediate(tick);
    let seen = 0;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    await store.startConsumer('acme', 'backlog', {
      pollIntervalMs: 10,
      deliveriesPerTurn: 8,
      handler: async () => {
        longest = Math.max(longest, ++inARow);
        if (++seen === 200) done();
        return { kind: 'ack' };
      },
    });
    await finished;
    draining = false;
    await store.stopConsumer('acme', 'backlog');
    await store.close();
    assert.ok(longest <= 8, `${longest} deliveries in a row without a turn`);
  });

  it("a worker's turn on a short queue makes no file, takes its lock as a link, and syncs its log once", async (t) => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    await Promise.all(
      Array.from({ length: 100 }, (_, n) => store.append('acme', 'short', { correlationId: `c${n}`, payload: { n } })),
    );
    const paths = store.paths('acme', 'short');
    assert.ok(existsSync(paths.consumerLog), 'made with the segment by the first append');
    // Locks come and go (the appender lets its own go after a linger): the files are what counts.
    const files = () =>
      readdirSync(paths.dir)
        .filter((n) => !n.endsWith('.lock'))
        .sort();
    const filesBefore = files();
    const syncs = t.mock.method(FdFile.prototype, 'datasync');
    let seen = 0;
    let done!: () => void;
    const all = new Promise<void>((r) => (done = r));
    const worker = await store.startConsumer('acme', 'short', {
      pollIntervalMs: 10_000,
      checkpointEvery: 64,
      handler: async () => {
        if (++seen === 100) done();
        return { kind: 'ack' };
      },
    });
    assert.ok(worker);
    const records = readdirSync(paths.lockOwners).map((n) => statSync(join(paths.lockOwners, n)).ino);
    assert.ok(
      records.includes(statSync(paths.consumerLock).ino),
      "the consumer lock is a link to this process's owner record",
    );
    await all;
    assert.equal(await worker.finish(), undefined, 'nothing left');
    const logSyncs = syncs.mock.calls.filter((c) => (c.this as FdFile).path === paths.consumerLog);
    assert.equal(logSyncs.length, 1, 'one sync of the consumer log per turn (at its end)');
    assert.deepEqual(files(), filesBefore, 'no file made or left by the turn');
    await store.close();
  });

  it('never reissues an id, across a drain and a reopen', async () => {
    const queuesDir = tempQueues();
    let store = new FileQueueStore({ queuesDir, idBlockSize: 4 });
    const first = await Promise.all(
      [1, 2, 3].map((n) => store.append('acme', 'ids', { correlationId: `c${n}`, payload: n })),
    );
    await consume(
      store,
      'acme',
      'ids',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 3,
    );
    const report = (await store.compact()).queues;
    assert.deepEqual(report, [{ tenant: 'acme', flow: 'ids', result: 'deleted' }]);
    assert.deepEqual((await store.compact()).queues, [{ tenant: 'acme', flow: 'ids', result: 'absent' }]);
    assert.deepEqual(await store.stats('acme', 'ids'), {
      tenant: 'acme',
      flow: 'ids',
      total: 0,
      processed: 0,
      pending: 0,
      retriesScheduled: 0,
      retries: [],
      deadLettersPending: 0,
    });
    await store.close();
    store = new FileQueueStore({ queuesDir, idBlockSize: 4 });
    const second = await store.append('acme', 'ids', { correlationId: 'c4', payload: 4 });
    assert.ok(second.id > Math.max(...first.map((r) => r.id)), `id ${second.id} is new`);
    assert.equal(second.byteOffset, 0, 'the segment started over');
    await store.close();
  });

  it('an empty queue with a running worker drains in place: counters drop to zero, ids continue', async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    for (let n = 0; n < 5; n++) await store.append('acme', 'drain', { correlationId: `c${n}`, payload: n });
    const seen: number[] = [];
    const c = await store.startConsumer('acme', 'drain', {
      pollIntervalMs: 10,
      handler: async (m) => (seen.push(m.id), { kind: 'ack' }),
    });
    assert.ok(c);
    for (let i = 0; i < 200 && seen.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
    const before = await store.stats('acme', 'drain');
    assert.equal(before.total, 5);
    assert.equal(before.processed, 5);
    assert.deepEqual((await store.compact()).queues, [{ tenant: 'acme', flow: 'drain', result: 'drained' }]);
    assert.equal(statSync(store.paths('acme', 'drain').segment).size, 0);
    const afterStats = await store.stats('acme', 'drain');
    assert.equal(afterStats.total, 0);
    assert.equal(afterStats.processed, 0);
    const r = await store.append('acme', 'drain', { correlationId: 'c5', payload: 5 });
    assert.equal(r.id, 6);
    for (let i = 0; i < 200 && seen.length < 6; i++) await new Promise((r2) => setTimeout(r2, 10));
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
    await store.close();
  });

  it('compaction keeps a queue with unprocessed messages and drains but keeps one with a pending dead letter', async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    await store.append('acme', 'waiting', { correlationId: 'c', payload: 1 });
    await store.append('acme', 'dead', { correlationId: 'c', payload: 'bad' });
    await consume(
      store,
      'acme',
      'dead',
      () => ({ kind: 'dead', error: 'boom' }),
      (s) => s.length >= 1,
    );
    const report = (await store.compact()).queues;
    assert.deepEqual(report, [
      { tenant: 'acme', flow: 'dead', result: 'drained' },
      { tenant: 'acme', flow: 'waiting', result: 'kept' },
    ]);
    assert.equal((await store.stats('acme', 'waiting')).pending, 1);
    assert.equal((await store.stats('acme', 'dead')).deadLettersPending, 1);
    await store.close();
  });

  it('compaction leaves a queue consumed elsewhere alone, and drains one whose only unsettled message waits for a retry', async () => {
    const queuesDir = tempQueues();
    const a = new FileQueueStore({ queuesDir });
    const b = new FileQueueStore({ queuesDir });
    await a.append('acme', 'later', { correlationId: 'c', payload: 1 });
    let failed!: () => void;
    const retried = new Promise<void>((r) => (failed = r));
    await a.startConsumer('acme', 'later', {
      pollIntervalMs: 10,
      handler: async () => ({ kind: 'retry', error: 'x', policy: FAST, delayMs: 60_000 }),
      onAttemptFailed: () => failed(),
    });
    await retried;
    assert.deepEqual((await b.compact()).queues, [{ tenant: 'acme', flow: 'later', result: 'busy' }]);
    await a.stopConsumer('acme', 'later');
    assert.deepEqual((await b.compact()).queues, [{ tenant: 'acme', flow: 'later', result: 'drained' }]);
    // The segment is given back; the retry, with its message, stays in the consumer log.
    assert.equal(statSync(b.paths('acme', 'later').segment).size, 0);
    assert.ok(existsSync(b.paths('acme', 'later').consumerLog));
    const stats = await b.stats('acme', 'later');
    assert.deepEqual([stats.total, stats.processed, stats.pending, stats.retriesScheduled], [0, 0, 0, 1]);
    assert.equal(stats.retries.length, 1);
    assert.equal(stats.retries[0]!.attempts, 1);
    assert.ok(stats.retries[0]!.dueMs > Date.now() + 50_000, 'the retry is due about a minute later');
    await a.close();
    await b.close();
  });

  it('a pending retry does not hold the segment: a running worker drains it, and still delivers the retry', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    for (const n of [1, 2, 3]) await store.append('acme', 'q', { correlationId: `c${n}`, payload: n });
    const seen: string[] = [];
    await store.startConsumer('acme', 'q', {
      pollIntervalMs: 10,
      handler: async (m) => {
        seen.push(`${m.correlationId}#${m.attempt}`);
        // c2 fails once and waits 1.5 s for its retry: compaction runs meanwhile.
        if (m.correlationId === 'c2' && m.attempt === 1)
          return { kind: 'retry', error: 'later', policy: FAST, delayMs: 1500 };
        return { kind: 'ack' };
      },
    });
    await waitFor('c1 and c3 acked, c2 waiting', () => seen.length === 3 || undefined);
    assert.deepEqual((await store.compact()).queues, [{ tenant: 'acme', flow: 'q', result: 'drained' }]);
    assert.equal(statSync(store.paths('acme', 'q').segment).size, 0);
    assert.equal((await store.stats('acme', 'q')).retriesScheduled, 1);
    await waitFor('the retry of c2 delivered', () => seen.includes('c2#2') || undefined, 5000);
    assert.deepEqual(seen, ['c1#1', 'c2#1', 'c3#1', 'c2#2']);
    await waitFor('nothing left', async () =>
      (await store.stats('acme', 'q')).retriesScheduled === 0 ? true : undefined,
    );
    await store.close();
  });

  it("closes an appender's segment file once idle, and the next append re-opens it: ids go on, every message is delivered", async () => {
    const queuesDir = tempQueues();
    // Long enough that the three appends below, each fsynced, finish before the first is idle even on
    // a loaded machine (CI once took more than 60 ms for them); the wait below allows for it.
    const store = new FileQueueStore({ queuesDir, appenderIdleCloseMs: 1000 });
    const openSegments = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          const target = readlinkSync(`/proc/self/fd/${fd}`);
          return target.startsWith(queuesDir) && target.endsWith('/segment.log');
        } catch {
          return false; // the directory listing's own descriptor is gone by now
        }
      }).length;
    const first = [];
    for (const flow of ['a', 'b', 'c'])
      first.push((await store.append('acme', flow, { correlationId: 'c1', payload: 1 })).id);
    assert.equal(openSegments(), 3, 'one open segment per queue written to');
    await waitFor('the idle files closed', () => openSegments() === 0 || undefined, 10_000);
    assert.ok(existsSync(store.paths('acme', 'a').tailHint), 'a hint is left for the re-open');
    const again = await store.append('acme', 'a', { correlationId: 'c2', payload: 2 });
    assert.ok(again.id > first[0]!);
    const seen = await consume(
      store,
      'acme',
      'a',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 2,
    );
    assert.deepEqual(
      seen.map((m) => m.payload),
      [1, 2],
    );
    await store.close();
  });

  it('a retry uses the backoff formula, counts attempts, and dead-letters at maxAttempts', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    await store.append('acme', 'retry', { correlationId: 'corr-1', payload: { x: 1 } });
    const failures: [number, number | undefined, boolean, string | undefined][] = [];
    const dead: string[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const seen: QueueMessage[] = [];
    await store.startConsumer('acme', 'retry', {
      pollIntervalMs: 10,
      handler: async (m) => (
        seen.push(m),
        { kind: 'retry', error: `fail ${m.attempt}`, policy: FAST, step: `post${m.attempt}` }
      ),
      onAttemptFailed: (f) => failures.push([f.message.attempt, f.retryInMs, f.deadLettered, f.step]),
      onDeadLettered: (d) => {
        dead.push(`${d.message.correlationId} at ${d.step}`);
        done();
      },
    });
    await Promise.race([finished, new Promise((r) => setTimeout(r, 5000).unref())]);
    assert.deepEqual(
      seen.map((m) => [m.attempt, m.isRetry]),
      [
        [1, false],
        [2, true],
        [3, true],
      ],
    );
    assert.deepEqual(failures, [
      [1, 10, false, 'post1'],
      [2, 20, false, 'post2'],
      [3, undefined, true, 'post3'],
    ]);
    assert.deepEqual(dead, ['corr-1 at post3']);
    const rows = await store.listDeadLetters();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.attempts, 3);
    assert.equal(rows[0]!.last_error, 'fail 3');
    assert.deepEqual(rows[0]!.payload, { x: 1 });
    assert.equal('correlation_id' in rows[0]!, false, 'a dead letter never holds the correlation id');
    await store.close();
  });

  it('a retry that came due while no worker ran fires at once on restart (absolute due time)', async () => {
    const queuesDir = tempQueues();
    let store = new FileQueueStore({ queuesDir });
    await store.append('acme', 'due', { correlationId: 'c', payload: 1 });
    await consume(
      store,
      'acme',
      'due',
      () => ({ kind: 'retry', error: 'later', policy: FAST, delayMs: 400 }),
      (s) => s.length >= 1,
    );
    await store.close();
    // On purpose: the retry comes due (400 ms) while no worker runs.
    await new Promise((r) => setTimeout(r, 450));
    store = new FileQueueStore({ queuesDir });
    const t0 = Date.now();
    const seen = await consume(
      store,
      'acme',
      'due',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 1,
    );
    const waited = Date.now() - t0;
    assert.equal(seen[0]!.attempt, 2);
    assert.ok(waited < 250, `fired after ${waited} ms, not a fresh 400 ms wait`);
    await store.close();
  });

  it('retry-fixed does not consume an attempt and never dead-letters', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    await store.append('acme', 'fixed', { correlationId: 'c', payload: 1 });
    let tries = 0;
    const seen = await consume(
      store,
      'acme',
      'fixed',
      () => (++tries >= 6 ? { kind: 'ack' } : { kind: 'retry-fixed', delayMs: 5 }),
      (s) => s.length >= 6,
    );
    assert.equal(seen.length, 6);
    assert.ok(seen.every((m) => m.attempt === 1));
    assert.equal((await store.listDeadLetters()).length, 0);
    await store.close();
  });

  it('fresh messages are delivered FIFO; a rescheduled one loses its place', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    for (let n = 0; n < 4; n++) await store.append('acme', 'fifo', { correlationId: `c${n}`, payload: n });
    const seen = await consume(
      store,
      'acme',
      'fifo',
      (m) =>
        m.payload === 1 && m.attempt === 1
          ? { kind: 'retry', error: 'x', policy: FAST, delayMs: 500 }
          : { kind: 'ack' },
      (s) => s.length >= 5,
    );
    assert.deepEqual(
      seen.map((m) => m.payload),
      [0, 1, 2, 3, 1],
    );
    await store.close();
  });

  it('dead letters: replay appends a new message with a new id and correlation id; discard hides at once; both refuse unknown ids', async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    const a = await store.append('acme', 'dlq', { correlationId: 'orig-a', payload: { a: 1 } });
    const b = await store.append('acme', 'dlq', { correlationId: 'orig-b', payload: { b: 2 } });
    await consume(
      store,
      'acme',
      'dlq',
      () => ({ kind: 'dead', error: 'integrity' }),
      (s) => s.length >= 2,
    );
    assert.deepEqual(
      (await store.listDeadLetters({ tenant: 'acme' })).map((r) => r.id),
      [a.id, b.id],
    );
    const replay = await store.replayDeadLetter('acme', 'dlq', a.id);
    assert.ok(replay.message.id > b.id);
    assert.notEqual(replay.message.correlationId, 'orig-a');
    await store.discardDeadLetter('acme', 'dlq', b.id);
    assert.deepEqual(await store.listDeadLetters(), []);
    await assert.rejects(store.discardDeadLetter('acme', 'dlq', b.id), { code: 'SVC_ERR_NOT_FOUND' });
    await assert.rejects(store.replayDeadLetter('acme', 'dlq', 12345), { code: 'SVC_ERR_NOT_FOUND' });
    const seen = await consume(
      store,
      'acme',
      'dlq',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 1,
    );
    assert.deepEqual(
      [seen[0]!.id, seen[0]!.attempt, seen[0]!.payload, seen[0]!.correlationId],
      [replay.message.id, 1, { a: 1 }, replay.message.correlationId],
    );
    // The handled bodies are physically removed at the drain.
    const dlqFile = store.paths('acme', 'dlq').deadLetters;
    assert.match(readFileSync(dlqFile, 'utf8'), /"b":2/);
    assert.deepEqual((await store.compact()).queues, [{ tenant: 'acme', flow: 'dlq', result: 'deleted' }]);
    assert.equal(existsSync(dlqFile), false);
    await store.close();
  });

  it('an append in the same process wakes an idle worker at once, well before its poll interval', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    const seen: number[] = [];
    await store.append('acme', 'wake', { correlationId: 'c', payload: 0 });
    await store.startConsumer('acme', 'wake', {
      pollIntervalMs: 10_000,
      handler: async () => (seen.push(Date.now()), { kind: 'ack' }),
    });
    for (let i = 0; i < 100 && seen.length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    // On purpose: the worker settles into its idle wait (a 10 s poll) before the appends below.
    await new Promise((r) => setTimeout(r, 50));
    for (let round = 0; round < 3; round++) {
      const t0 = Date.now();
      await store.append('acme', 'wake', { correlationId: 'c', payload: round + 1 });
      for (let i = 0; i < 100 && seen.length < round + 2; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(seen.length, round + 2);
      assert.ok(seen[round + 1]! - t0 < 1000, `delivered after ${seen[round + 1]! - t0} ms`);
    }
    await store.close();
  });

  it('a worker in the appending process gets each record as the file holds it (a JSON copy, not the object given)', async () => {
    const { store, seen, seenCount } = await caughtUpWorker('copy');
    const payload = { n: 1, dropped: undefined, when: new Date(0), neg: -0, list: [1, 'é'] };
    await store.append('acme', 'copy', { correlationId: 'c1', payload });
    await seenCount(2);
    assert.equal(seen.length, 2);
    assert.notEqual(seen[1]!.payload, payload);
    assert.deepEqual(seen[1]!.payload, JSON.parse(JSON.stringify(payload)));
    assert.equal(Object.is((seen[1]!.payload as { neg: number }).neg, 0), true);
    const scan = await scanFile<SegmentRecord>(store.paths('acme', 'copy').segment);
    assert.deepEqual(
      seen.map((m) => m.payload),
      scan.frames.map((f) => f.value.payload),
    );
    await store.close();
  });

  it('a record that has no JSON form is refused alone; the rest of its batch is written and handed over in place', async () => {
    const { store, seen, seenCount } = await caughtUpWorker('mixed');
    const [a, bad, b] = await Promise.allSettled([
      store.append('acme', 'mixed', { correlationId: 'c1', payload: { n: 1 } }),
      store.append('acme', 'mixed', { correlationId: 'c2', payload: { n: 2n } }),
      store.append('acme', 'mixed', { correlationId: 'c3', payload: { n: 3 } }),
    ]);
    assert.equal(a.status, 'fulfilled');
    assert.equal(bad.status, 'rejected');
    assert.equal(b.status, 'fulfilled');
    await seenCount(3);
    const scan = await scanFile<SegmentRecord>(store.paths('acme', 'mixed').segment);
    assert.deepEqual(
      seen.map((m) => m.payload),
      [0, { n: 1 }, { n: 3 }],
    );
    assert.deepEqual(
      seen.map((m) => m.id),
      scan.frames.map((f) => f.value.id),
    );
    await store.close();
  });

  it('delivers every record once, in segment order, while the worker lags past its read-ahead and another process appends too', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    const other = new FileQueueStore({ queuesDir: store.queuesDir }); // as another server would
    const delivered: number[] = [];
    let slow = 0;
    await store.append('acme', 'lag', { correlationId: 'c', payload: 0 });
    await store.startConsumer('acme', 'lag', {
      pollIntervalMs: 10,
      handler: async (m) => {
        delivered.push(m.id);
        // Slower than the appends for a while, so committed batches pile up past the read-ahead.
        if (++slow % 200 === 0) await new Promise((r) => setTimeout(r, 20));
        return { kind: 'ack' };
      },
    });
    let total = 1;
    for (let burst = 0; burst < 30; burst++) {
      const mine = Array.from({ length: 100 }, (_, n) =>
        store.append('acme', 'lag', { correlationId: `m${burst}-${n}`, payload: { burst, n } }),
      );
      const theirs =
        burst % 3 === 0
          ? Array.from({ length: 20 }, (_, n) =>
              other.append('acme', 'lag', { correlationId: `o${burst}-${n}`, payload: { burst, n } }),
            )
          : [];
      await Promise.all([...mine, ...theirs]);
      total += mine.length + theirs.length;
    }
    for (let i = 0; i < 1000 && delivered.length < total; i++) await new Promise((r) => setTimeout(r, 10));
    const scan = await scanFile<SegmentRecord>(store.paths('acme', 'lag').segment);
    assert.equal(scan.frames.length, total);
    assert.deepEqual(
      delivered,
      scan.frames.map((f) => f.value.id),
    );
    await other.close();
    await store.close();
  });

  it('the outbox: a worker hands back, before its delivery, the receipt of a record another process appended, never of its own', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    const own = [];
    for (const n of [1, 2])
      own.push(await store.append('acme', 'box', { correlationId: `own-${n}`, payload: n, receiptSource: 'enqueue' }));
    await store.append('acme', 'box', { correlationId: 'no-receipt', payload: 3 });
    // A record as a process that died after its 202 left it (another writer's mark).
    const segment = store.paths('acme', 'box').segment;
    const foreignAt = statSync(segment).size;
    const foreign: SegmentRecord = {
      id: 1_000_000,
      correlation_id: 'theirs',
      enqueued_at: new Date().toISOString(),
      attempts: 0,
      payload: 4,
      src: 'queue_publish',
      w: 'another-process',
    };
    appendFileSync(segment, encodeFrame(foreign));
    const handedBack: { receipt: QueuedReceipt; deliveredBefore: string[] }[] = [];
    const delivered: string[] = [];
    await store.startConsumer('acme', 'box', {
      pollIntervalMs: 10,
      handler: async (m) => (delivered.push(m.correlationId), { kind: 'ack' }),
      onReceiptRead: (receipt) => handedBack.push({ receipt, deliveredBefore: [...delivered] }),
    });
    await waitFor('4 deliveries', () => delivered.length === 4);
    await store.stopConsumer('acme', 'box');
    assert.deepEqual(handedBack, [
      {
        receipt: { id: 1_000_000, correlationId: 'theirs', offset: foreignAt, source: 'queue_publish' },
        deliveredBefore: ['own-1', 'own-2', 'no-receipt'],
      },
    ]);
    // What svc audit --verify and svc store migrate chain from: every record that carries a receipt.
    assert.deepEqual(await store.heldReceipts('acme', 'box'), [
      ...own.map((r, i) => ({ id: r.id, correlationId: `own-${i + 1}`, offset: r.byteOffset, source: 'enqueue' })),
      { id: 1_000_000, correlationId: 'theirs', offset: foreignAt, source: 'queue_publish' },
    ]);
    await store.close();
  });

  /** Two stores on one queues directory, as two processes would open it, and a worker's options that ack all. */
  const twoStores = () => {
    const store = new FileQueueStore({ queuesDir: tempQueues() });
    const other = new FileQueueStore({ queuesDir: store.queuesDir });
    return { store, other, opts: { handler: async () => ({ kind: 'ack' }) as const } };
  };

  it("a caught-up worker asks for its deliveries' records in the background (recordsDurableSoon), and writes the checkpoint past them once that answers", async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    // Another store on the directory reads the checkpoint written (the worker's own counts what it delivered).
    const probe = new FileQueueStore({ queuesDir });
    const written = async () => (await probe.stats('acme', 'soon')).processed;
    for (let n = 0; n < 3; n++) await store.append('acme', 'soon', { correlationId: `c${n}`, payload: n });
    const seen: number[] = [];
    let hurried = 0;
    let askedSoon = 0;
    let answer!: () => void;
    const records = new Promise<void>((r) => (answer = r));
    await store.startConsumer('acme', 'soon', {
      // Caught up, it waits at most 100 ms at a time while its checkpoint is behind (CHECKPOINT_SYNC_MS).
      pollIntervalMs: 60_000,
      handler: async (m) => (seen.push(m.id), { kind: 'ack' }),
      recordsDurable: async () => void hurried++,
      recordsDurableSoon: () => (askedSoon++, records),
    });
    await waitFor('three deliveries', () => seen.length === 3, 5000);
    await new Promise((r) => setTimeout(r, 250)); // idle: past the loop's 100 ms waits while behind
    assert.equal(await written(), 0, 'no checkpoint past deliveries whose records are not durable');
    assert.equal(hurried, 0, 'caught up, the worker did not wait for an urgent barrier');
    assert.ok(askedSoon >= 1, 'it asked in the background');
    answer();
    await waitFor('the checkpoint past the three', async () => (await written()) === 3, 2000);
    await store.close();
    await probe.close();
  });

  it('only one consumer per queue at a time, and close releases it', async () => {
    const { store, other, opts } = twoStores();
    await store.append('acme', 'one', { correlationId: 'c', payload: 1 });
    assert.equal(other.servedElsewhereNow('acme', 'one'), false, 'not known before it was asked');
    assert.ok(await store.startConsumer('acme', 'one', opts));
    assert.equal(await other.startConsumer('acme', 'one', opts), undefined);
    assert.equal(other.servedElsewhereNow('acme', 'one'), true, 'found held, and still held');
    assert.equal(other.servedElsewhereNow('acme', 'two'), false, 'another queue');
    await store.stopConsumer('acme', 'one');
    assert.equal(other.servedElsewhereNow('acme', 'one'), false, 'its holder let it go');
    assert.ok(await other.startConsumer('acme', 'one', opts));
    assert.equal(other.servedElsewhereNow('acme', 'one'), false, 'served here now');
    await other.close();
    await store.close();
  });

  it('a process appending to a queue served elsewhere looks at the lock once per durable batch of its own', async () => {
    const { store, other, opts } = twoStores();
    assert.ok(await store.startConsumer('acme', 'one', opts));
    assert.equal(await other.startConsumer('acme', 'one', opts), undefined);
    await Promise.all([1, 2, 3].map((n) => other.append('acme', 'one', { correlationId: `c${n}`, payload: n })));
    assert.equal(other.servedElsewhereNow('acme', 'one'), true, 'looked after the batch: held');
    // The holder lets go after that look. It reads the queue's backlog after letting go (and so
    // finds the batch), so nothing of this process's is left unserved: no second look is owed.
    await store.stopConsumer('acme', 'one');
    assert.equal(other.servedElsewhereNow('acme', 'one'), true, 'answered by the look made after the batch');
    await other.append('acme', 'one', { correlationId: 'c4', payload: 4 });
    assert.equal(other.servedElsewhereNow('acme', 'one'), false, 'a new batch: looked again, and it is free');
    await other.close();
    await store.close();
  });

  it('close abandons a handler that outlives the grace period without acking it', async () => {
    const queuesDir = tempQueues();
    const store = new FileQueueStore({ queuesDir });
    await store.append('acme', 'slow', { correlationId: 'c', payload: 1 });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    await store.startConsumer('acme', 'slow', {
      pollIntervalMs: 10,
      closeGraceMs: 50,
      handler: () => (started(), new Promise(() => undefined)),
    });
    await running;
    await store.close();
    const again = new FileQueueStore({ queuesDir });
    const seen = await consume(
      again,
      'acme',
      'slow',
      () => ({ kind: 'ack' }),
      (s) => s.length >= 1,
    );
    assert.equal(seen[0]!.id, 1);
    await again.close();
  });
});

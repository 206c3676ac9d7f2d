import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { LockFile, FileQueueStore, readLockOwner, type QueueMessage, type SegmentRecord } from '../src/queue/index.js';
import { WRITE_LOCK_OPTIONS } from '../src/queue/coordination/lock-file.js';
import { scanFile } from '../src/queue/file/file-io.js';
import { queuePaths } from '../src/queue/file/queue-paths.js';
import { onlyOn } from './helpers/svc.js';

const CHILD = resolve(dirname(fileURLToPath(import.meta.url)), 'helpers/queue-child.js');
const root = mkdtempSync(join(tmpdir(), 'svc-queue-mp-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

interface Child {
  readonly proc: ChildProcess;
  lines(): string[];
  /** Resolves once `pred` holds for the output (rejects after 15 s). */
  waitFor(pred: (lines: string[]) => boolean): Promise<void>;
  exited: Promise<number | null>;
}

function child(args: string[]): Child {
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (const w of waiters) w();
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const lines = () => out.split('\n').filter((l) => l.length > 0);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return {
    proc,
    lines,
    exited,
    waitFor: (pred) =>
      new Promise<void>((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`child ${args[0]} timed out; stderr: ${err}`)), 15_000);
        const check = () => {
          if (pred(lines())) {
            clearTimeout(timer);
            res();
          }
        };
        waiters.push(check);
        void exited.then(() => {
          check();
          clearTimeout(timer);
          rej(new Error(`child ${args[0]} exited; stderr: ${err}`));
        });
        check();
      }),
  };
}

async function kill9(c: Child): Promise<void> {
  c.proc.kill('SIGKILL');
  await c.exited;
}

/** Consumes until `expected` messages arrived (or 30 s passed, or nothing more came for 2 s past it). */
async function drainAll(
  store: FileQueueStore,
  tenant: string,
  flow: string,
  expected = Infinity,
): Promise<QueueMessage[]> {
  const seen: QueueMessage[] = [];
  const c = await store.startConsumer(tenant, flow, {
    pollIntervalMs: 10,
    handler: async (m) => (seen.push(m), { kind: 'ack' }),
  });
  assert.ok(c);
  // A loaded machine may pause delivery for a while: wait for the count, not for a quiet spell.
  const deadline = Date.now() + 30_000;
  while (seen.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  let last = -1;
  for (let i = 0; i < 40 && seen.length !== last; i++) {
    last = seen.length;
    await new Promise((r) => setTimeout(r, 50));
  }
  await store.stopConsumer(tenant, flow);
  return seen;
}

// The PostgreSQL queue across processes: test/cluster-pg.test.ts (appends from three nodes, kill -9 of a
// worker's node), test/cluster-pg-pause.test.ts (a worker's node paused past its lease), queue-crash
// in the PostgreSQL pass (kill -9 of a --store server mid-storm), test/conformance/queue/postgres.test.ts.
describe(
  'queue across processes',
  { skip: onlyOn('sqlite', "the state directory's file queue and lock files, driven by child processes") },
  () => {
    it('a lock held by a live process excludes others, and is taken over once its holder is SIGKILLed', async () => {
      const path = join(root, 'locks', 'scheduler.lock');
      const holder = child(['hold-lock', path]);
      await holder.waitFor((l) => l.includes('locked'));
      assert.equal(await LockFile.tryAcquire(path), undefined);
      await kill9(holder);
      const lock = await LockFile.tryAcquire(path);
      assert.ok(lock, 'taken over from the dead holder');
      assert.equal(lock.tookOver, true);
      await lock.release();
    });

    it('a lock whose holder stopped heartbeating past the lease is broken even if its PID is alive', async () => {
      const path = join(root, 'locks', 'lease.lock');
      // PID 1 is alive (our own PID would be too): only the stale mtime can free this lock.
      writeFileSync(
        path,
        JSON.stringify({ pid: 1, host: 'other-host', token: 'x', acquiredAt: '2020-01-01T00:00:00Z' }),
      );
      assert.equal(await LockFile.tryAcquire(path, { leaseMs: 60_000 }), undefined);
      const old = new Date(Date.now() - 120_000);
      utimesSync(path, old, old);
      const lock = await LockFile.tryAcquire(path, { leaseMs: 60_000 });
      assert.ok(lock);
      await lock.release();
    });

    it('two processes appending to one queue at once lose and duplicate nothing', async () => {
      const queuesDir = join(root, 'q2');
      const a = child(['append', queuesDir, 'acme', 'shared', '400', '16']);
      const b = child(['append', queuesDir, 'acme', 'shared', '400', '16']);
      assert.deepEqual(await Promise.all([a.exited, b.exited]), [0, 0]);
      const acked = [...a.lines(), ...b.lines()].map((l) => l.split(' ').map(Number) as [number, number]);
      assert.equal(acked.length, 800);
      assert.equal(new Set(acked.map(([id]) => id)).size, 800, 'no id handed out twice');
      assert.equal(new Set(acked.map(([, off]) => off)).size, 800, 'no offset handed out twice');
      const store = new FileQueueStore({ queuesDir });
      const seen = await drainAll(store, 'acme', 'shared', acked.length);
      assert.deepEqual(
        seen.map((m) => m.id).sort((x, y) => x - y),
        acked.map(([id]) => id).sort((x, y) => x - y),
      );
      await store.close();
    });

    it('a worker delivers, exactly once each, what another process appends while it runs', async () => {
      const queuesDir = join(root, 'live');
      const store = new FileQueueStore({ queuesDir });
      const seen: number[] = [];
      await store.startConsumer('acme', 'live', {
        pollIntervalMs: 5,
        handler: async (m) => (seen.push(m.id), { kind: 'ack' }),
      });
      const writer = child(['append', queuesDir, 'acme', 'live', '300', '8']);
      assert.equal(await writer.exited, 0);
      const acked = writer.lines().map((l) => Number(l.split(' ')[0]));
      for (let i = 0; i < 300 && seen.length < acked.length; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(
        [...seen].sort((x, y) => x - y),
        [...acked].sort((x, y) => x - y),
      );
      await store.close();
    });

    it('every acknowledged append survives a SIGKILL mid-storm', async () => {
      const queuesDir = join(root, 'storm');
      const storm = child(['storm', queuesDir, 'acme', 'storm', '32']);
      await storm.waitFor((l) => l.length >= 2000);
      await kill9(storm);
      const acked = storm
        .lines()
        .filter((l) => /^\d+ \d+$/.test(l))
        .map((l) => Number(l.split(' ')[0]));
      assert.ok(acked.length >= 2000);
      const store = new FileQueueStore({ queuesDir });
      // A new append after the crash must land after whatever the storm left, torn or not.
      const after = await store.append('acme', 'storm', { correlationId: 'after', payload: 'after' });
      const seen = await drainAll(store, 'acme', 'storm');
      const ids = new Set(seen.map((m) => m.id));
      const missing = acked.filter((id) => !ids.has(id));
      assert.deepEqual(missing, [], `${missing.length} acknowledged ids lost`);
      assert.ok(ids.has(after.id));
      assert.equal(ids.size, seen.length, 'no message delivered twice');
      await store.close();
    });

    it('a consumer killed between the run and the checkpoint has the message redelivered', async () => {
      const queuesDir = join(root, 'redeliver');
      const store = new FileQueueStore({ queuesDir });
      const ids: number[] = [];
      for (const p of [{ n: 0 }, { n: 1 }, { n: 2, hang: true }, { n: 3 }])
        ids.push((await store.append('acme', 'crash', { correlationId: 'c', payload: p })).id);
      const consumer = child(['consume-hang', queuesDir, 'acme', 'crash']);
      await consumer.waitFor((l) => l.includes(`got ${ids[2]}`));
      assert.equal(
        await store.startConsumer('acme', 'crash', { handler: async () => ({ kind: 'ack' }) }),
        undefined,
        'the live worker holds the queue',
      );
      await kill9(consumer);
      const seen = await drainAll(store, 'acme', 'crash');
      assert.deepEqual(
        seen.map((m) => m.id),
        [ids[2], ids[3]],
        'acked-and-checkpointed messages are not redelivered; the in-flight one is',
      );
      await store.close();
    });

    it("an appender's remembered look at a worker another process runs: held while it runs, not once it is SIGKILLed or paused past its lease", async () => {
      const dir = join(root, 'held-elsewhere');
      const appender = new FileQueueStore({ queuesDir: dir });
      const opts = { handler: async () => ({ kind: 'ack' }) as const, lockLeaseMs: 600 };
      try {
        for (const [flow, end] of [
          ['killed', 'SIGKILL'],
          ['paused', 'SIGSTOP'],
        ] as const) {
          await appender.append('acme', flow, { correlationId: 'first', payload: 0 });
          const holder = child(['consume-print', dir, 'acme', flow, '600']);
          await holder.waitFor((l) => l.includes('got 1'));
          assert.equal(await appender.startConsumer('acme', flow, opts), undefined, `${flow}: held by the child`);
          await appender.append('acme', flow, { correlationId: 'second', payload: 1 });
          assert.equal(appender.servedElsewhereNow('acme', flow), true, `${flow}: the child runs it`);
          if (end === 'SIGKILL') await kill9(holder);
          else {
            holder.proc.kill('SIGSTOP');
            await new Promise((r) => setTimeout(r, 1200)); // past the 600 ms lease
          }
          // The next submission's look (after its batch is durable) sees the holder gone.
          await appender.append('acme', flow, { correlationId: 'third', payload: 2 });
          assert.equal(appender.servedElsewhereNow('acme', flow), false, `${flow}: not held any more`);
          assert.ok(await appender.startConsumer('acme', flow, opts), `${flow}: taken over`);
          await appender.stopConsumer('acme', flow);
          if (end === 'SIGSTOP') await kill9(holder);
        }
      } finally {
        await appender.close();
      }
    });

    it('a worker paused (SIGSTOP) past its lease is taken over, and once resumed (SIGCONT) delivers nothing more', async () => {
      const dir = join(root, 'paused');
      const seed = new FileQueueStore({ queuesDir: dir });
      for (let n = 0; n < 3; n++) await seed.append('acme', 'paused', { correlationId: `before-${n}`, payload: { n } });
      await seed.close();
      const a = child(['consume-print', dir, 'acme', 'paused', '600']);
      await a.waitFor((l) => l.filter((x) => x.startsWith('got ')).length === 3);
      a.proc.kill('SIGSTOP');
      try {
        await new Promise((r) => setTimeout(r, 1200)); // past the 600 ms lease: A's heartbeat has stopped
        const b = new FileQueueStore({ queuesDir: dir });
        const got: number[] = [];
        const consumer = await b.startConsumer('acme', 'paused', {
          pollIntervalMs: 20,
          checkpointEvery: 1,
          lockLeaseMs: 600,
          handler: async (m) => (got.push(m.id), { kind: 'ack' }),
        });
        assert.ok(consumer, 'B takes the stale lock over');
        const ids: number[] = [];
        for (let n = 0; n < 20; n++)
          ids.push((await b.append('acme', 'paused', { correlationId: `after-${n}`, payload: { n } })).id);
        a.proc.kill('SIGCONT');
        await a.waitFor((l) => l.includes('lost'));
        for (let n = 20; n < 40; n++)
          ids.push((await b.append('acme', 'paused', { correlationId: `after-${n}`, payload: { n } })).id);
        const deadline = Date.now() + 10_000;
        const fresh = () => got.filter((id) => ids.includes(id));
        while (fresh().length < ids.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 300)); // room for a wrong second delivery to show
        assert.deepEqual(
          [...fresh()].sort((x, y) => x - y),
          ids,
          'B delivers every new message exactly once',
        );
        // The one message A had run but not yet checkpointed when it was stopped may come again (at least once).
        const older = got.filter((id) => !ids.includes(id));
        assert.ok(older.length <= 1, `B redelivered at most A's unfinished message, got ${older.join(', ')}`);
        const byA = a
          .lines()
          .filter((x) => x.startsWith('got '))
          .map((x) => Number(x.slice(4)));
        assert.deepEqual(
          byA.filter((id) => ids.includes(id)),
          [],
          'A, once resumed, delivers nothing more',
        );
        await b.close();
      } finally {
        if (a.proc.signalCode === null && a.proc.exitCode === null) a.proc.kill('SIGCONT');
        await kill9(a);
      }
    });

    it('a worker paused (SIGSTOP) mid-drain past its lease: the new holder redelivers at most one checkpoint interval and the running message (issue 33, item 7)', async (t) => {
      const dir = join(root, 'paused-drain');
      const seed = new FileQueueStore({ queuesDir: dir });
      await Promise.all(
        Array.from({ length: 5000 }, (_, n) =>
          seed.append('acme', 'drain', { correlationId: `d-${n}`, payload: { n } }),
        ),
      );
      await seed.close();
      const a = child(['consume-drain', dir, 'acme', 'drain', '600']);
      let b: FileQueueStore | undefined;
      try {
        // Stopped at an arbitrary moment of the drain (not when it has caught up and written its checkpoint).
        await a.waitFor((l) => l.length >= 1000 + Math.floor(Math.random() * 64));
        a.proc.kill('SIGSTOP');
        const byA = new Set(
          a
            .lines()
            .filter((x) => x.startsWith('got '))
            .map((x) => Number(x.slice(4))),
        );
        await new Promise((r) => setTimeout(r, 1200)); // past the 600 ms lease
        b = new FileQueueStore({ queuesDir: dir });
        const got: number[] = [];
        assert.ok(
          await b.startConsumer('acme', 'drain', {
            pollIntervalMs: 20,
            lockLeaseMs: 600,
            handler: async (m) => (got.push(m.id), { kind: 'ack' }),
          }),
        );
        const deadline = Date.now() + 10_000;
        // Counted as distinct messages: a redelivery is not progress (a sum of both sides stopped short by as many).
        const delivered = () => new Set([...byA, ...got]).size;
        while (delivered() < 5000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        const again = got.filter((id) => byA.has(id));
        t.diagnostic(`A ran ${byA.size} before its pause; B delivered ${again.length} of them again`);
        assert.ok(
          again.length <= 16 + 1,
          `B delivered again ${again.length} messages A had run: at most 16 acknowledged since A's last checkpoint write and the one running`,
        );
        assert.equal(delivered(), 5000, 'nothing lost');
      } finally {
        if (a.proc.signalCode === null && a.proc.exitCode === null) a.proc.kill('SIGCONT');
        await kill9(a);
        await b?.close();
      }
    });

    it('a writer paused (SIGSTOP) holding the append lock holds up the appends of another process for at most the lease, and once resumed (SIGCONT) loses and duplicates nothing', async () => {
      const queuesDir = join(root, 'paused-append');
      const paths = queuePaths(queuesDir, 'acme', 'held');
      const a = child(['storm', queuesDir, 'acme', 'held', '32']);
      const b = new FileQueueStore({ queuesDir });
      try {
        await a.waitFor((l) => l.length >= 500);
        // Stop A at a moment it holds the append lock (a busy writer holds it most of the time).
        let caught = false;
        for (let tries = 0; tries < 200 && !caught; tries++) {
          a.proc.kill('SIGSTOP');
          caught = (await readLockOwner(paths.appendLock))?.pid === a.proc.pid;
          if (!caught) {
            a.proc.kill('SIGCONT');
            await new Promise((r) => setTimeout(r, 5));
          }
        }
        assert.ok(caught, 'A was stopped while holding the append lock');
        const started = Date.now();
        const first = await b.append('acme', 'held', { correlationId: 'b-0', payload: { b: 0 } });
        const waitedMs = Date.now() - started;
        // Before the bound a stalled holder blocked others for 10 s (the old lease and wait limit).
        assert.ok(
          waitedMs < WRITE_LOCK_OPTIONS.leaseMs + 3000,
          `B's append waited ${waitedMs} ms for a stopped holder`,
        );
        const bAcked: [number, number][] = [[first.id, first.byteOffset]];
        for (let n = 1; n < 50; n++) {
          const r = await b.append('acme', 'held', { correlationId: `b-${n}`, payload: { b: n } });
          bAcked.push([r.id, r.byteOffset]);
        }
        const before = a.lines().length;
        a.proc.kill('SIGCONT');
        // A writes on (its next batch must notice the lock is no longer its own), then dies.
        await a.waitFor((l) => l.length >= before + 500);
        await kill9(a);
        const aAcked = a
          .lines()
          .filter((l) => /^\d+ \d+$/.test(l))
          .map((l) => l.split(' ').map(Number) as [number, number]);
        const acked = [...aAcked, ...bAcked];
        assert.equal(new Set(acked.map(([id]) => id)).size, acked.length, 'no id handed out twice');
        // Every acknowledged record is in the file, whole, at the offset its writer was told.
        const atOffset = new Map<number, number>();
        await scanFile<SegmentRecord>(paths.segment, 0, (f) => atOffset.set(f.offset, f.value.id));
        const misplaced = acked.filter(([id, off]) => atOffset.get(off) !== id);
        assert.deepEqual(misplaced, [], `${misplaced.length} acknowledged records not at their offsets`);
        const seen = await drainAll(b, 'acme', 'held', acked.length);
        const ids = seen.map((m) => m.id);
        assert.equal(new Set(ids).size, ids.length, 'no message delivered twice');
        const delivered = new Set(ids);
        assert.deepEqual(
          acked.filter(([id]) => !delivered.has(id)),
          [],
          'every acknowledged message delivered',
        );
      } finally {
        if (a.proc.signalCode === null && a.proc.exitCode === null) {
          a.proc.kill('SIGCONT');
          await kill9(a);
        }
        await b.close();
      }
    });
    it('a worker SIGKILLed again and again while compaction cuts the processed prefix off its segment, under an append storm: no acked message lost, the prefix never delivered again', async (t) => {
      const queuesDir = join(root, 'trim');
      const storm = child(['storm', queuesDir, 'acme', 'trim', '4']);
      await storm.waitFor((l) => l.length >= 200);
      const got: number[] = [];
      let trims = 0;
      const KILLS = 4;
      for (let k = 0; k < KILLS; k++) {
        const worker = child(['consume-trim', queuesDir, 'acme', 'trim']);
        // Killed at a moment of its own pace: after a number of deliveries that varies by round.
        const target = 150 + 97 * k;
        await worker.waitFor((l) => l.filter((x) => x.startsWith('got ')).length >= target && l.includes('trimmed'));
        await kill9(worker);
        got.push(
          ...worker
            .lines()
            .filter((x) => x.startsWith('got '))
            .map((x) => Number(x.slice(4))),
        );
        trims += worker.lines().filter((x) => x === 'trimmed').length;
      }
      await kill9(storm);
      const acked = storm.lines().map((l) => Number(l.split(' ')[0]));
      const rest = await drainAll(new FileQueueStore({ queuesDir }), 'acme', 'trim');
      const delivered = [...got, ...rest.map((m) => m.id)];
      const seen = new Set(delivered);
      assert.deepEqual(
        acked.filter((id) => !seen.has(id)),
        [],
        'every acknowledged message is delivered',
      );
      // A kill between a delivery and its checkpoint redelivers that one message; a cut that lost its
      // place would redeliver the whole processed prefix.
      const duplicates = delivered.length - seen.size;
      assert.ok(duplicates <= KILLS, `${duplicates} duplicate deliveries over ${KILLS} kills`);
      assert.ok(trims >= KILLS, `the prefix was cut ${trims} times`);
      t.diagnostic(
        `${acked.length} acked, ${delivered.length} deliveries, ${duplicates} duplicates, ${trims} cuts over ${KILLS} kills`,
      );
    });
  },
);

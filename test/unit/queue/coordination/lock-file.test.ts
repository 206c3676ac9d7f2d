import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { waitFor } from '../../../helpers/wait.js';
import { LockFile, readLockOwner } from '../../../../src/queue/coordination/lock-file.js';
import { queuePaths, writeLockOptions } from '../../../../src/queue/file/queue-paths.js';
import { SegmentAppender } from '../../../../src/queue/file/segment-appender.js';

const root = mkdtempSync(join(tmpdir(), 'svc-lock-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Appends without pause for `ms`, one batch after another; returns how many were acked. */
async function appendFor(appender: SegmentAppender, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let n = 0;
  while (Date.now() < end) {
    await Promise.all(Array.from({ length: 8 }, () => appender.append({ correlationId: 'c', payload: { n } })));
    n += 8;
  }
  return n;
}

describe('lock file waiting', () => {
  it('wanted is false until someone waits, and true while a waiter polls', async () => {
    const path = join(root, 'w', 'a.lock');
    const held = await LockFile.tryAcquire(path);
    assert.ok(held);
    assert.equal(await LockFile.wanted(path, 1000), false);
    const waiter = LockFile.acquire(path, { timeoutMs: 2000 });
    assert.equal(await waitFor('the waiter to show', () => LockFile.wanted(path, 1000), 1500), true);
    await held.release();
    const got = await waiter;
    await got.release();
  });

  it('a busy appender alone keeps its append lock past maxHoldMs', async (t) => {
    const paths = queuePaths(join(root, 'q1'), 'acme', 'alone');
    // A long linger: on a loaded machine a gap between batches must not let the lock go either,
    // so only a hand-back could release it.
    const appender = new SegmentAppender(paths, { maxHoldMs: 10, lingerMs: 5000 });
    await appender.append({ correlationId: 'first', payload: {} });
    assert.ok(await readLockOwner(paths.appendLock), 'held after the first batch');
    const release = t.mock.method(LockFile.prototype, 'release');
    await appendFor(appender, 120);
    const released = release.mock.calls.filter((c) => (c.this as LockFile).path === paths.appendLock);
    assert.equal(released.length, 0, 'never handed back: nobody waited');
    await appender.close();
  });

  it('a busy appender hands its append lock to a waiter within a few hold periods', async () => {
    const paths = queuePaths(join(root, 'q2'), 'acme', 'shared');
    const appender = new SegmentAppender(paths, { maxHoldMs: 10, lingerMs: 5000 });
    await appender.append({ correlationId: 'first', payload: {} });
    const busy = appendFor(appender, 400);
    const t0 = Date.now();
    const lock = await LockFile.acquire(paths.appendLock, { timeoutMs: 3000 });
    const waited = Date.now() - t0;
    await lock.release();
    assert.ok((await busy) > 0);
    assert.ok(waited < 1000, `waited ${waited} ms for the lock`);
    await appender.close();
  });
});

describe('an idle appender keeps its append lock (lingerMs, idleHoldMs)', () => {
  it('keeps it past lingerMs while nobody waits, so the next batch takes no lock', async (t) => {
    const paths = queuePaths(join(root, 'idle-1'), 'acme', 'idle');
    const appender = new SegmentAppender(paths, { lingerMs: 5, idleHoldMs: 2000 });
    await appender.append({ correlationId: 'first', payload: {} });
    const acquire = t.mock.method(LockFile, 'acquire');
    await new Promise((r) => setTimeout(r, 60)); // twelve looks, nobody waiting
    assert.ok(existsSync(paths.appendLock), 'still held after twelve lingerMs');
    await appender.append({ correlationId: 'second', payload: {} });
    assert.equal(acquire.mock.callCount(), 0, 'the second batch reused the lock');
    await appender.close();
  });

  it('lets it go once idleHoldMs has passed without a batch', async () => {
    const paths = queuePaths(join(root, 'idle-2'), 'acme', 'idle');
    const appender = new SegmentAppender(paths, { lingerMs: 5, idleHoldMs: 40 });
    await appender.append({ correlationId: 'first', payload: {} });
    assert.ok(existsSync(paths.appendLock));
    await waitFor('the lock to be let go', () => !existsSync(paths.appendLock), 1000);
    await appender.close();
  });

  it('hands it to a waiter at its next look, long before idleHoldMs', async () => {
    const paths = queuePaths(join(root, 'idle-3'), 'acme', 'idle');
    const appender = new SegmentAppender(paths, { lingerMs: 5, idleHoldMs: 60_000 });
    await appender.append({ correlationId: 'first', payload: {} });
    const t0 = Date.now();
    const lock = await LockFile.acquire(paths.appendLock, { ...writeLockOptions(paths), timeoutMs: 5000 });
    const waited = Date.now() - t0;
    await lock.release();
    assert.ok(waited < 1000, `waited ${waited} ms for an idle appender's lock`);
    // The appender takes it again for its next batch.
    await appender.append({ correlationId: 'second', payload: {} });
    await appender.close();
  });
});

describe('linked locks (ownersDir): a hard link to the process owner record', () => {
  const recordsIn = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.owner'));
  /** A PID that ran and has exited (a child waited for). */
  const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

  it('is a link to this process record, no file of its own; held against a second taker; released by unlinking', async () => {
    const owners = join(root, 'owners-1');
    const path = join(root, 'linked', 'a.lock');
    const lock = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(lock);
    const [record] = recordsIn(owners);
    assert.ok(record?.startsWith(`${process.pid}-`), `the record is named after this process: ${record}`);
    assert.equal(statSync(path).ino, statSync(join(owners, record)).ino, 'one inode');
    assert.equal((await readLockOwner(path))?.pid, process.pid);
    assert.equal(await LockFile.tryAcquire(path, { ownersDir: owners }), undefined, 'held');
    await lock.release();
    assert.equal(existsSync(path), false);
    assert.deepEqual(recordsIn(owners), [record], 'the record stays for the next lock');
    const again = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(again);
    assert.ok(again.stillHeldSync());
    await again.release();
  });

  it('lost while paused and taken again by this process: the old holder neither holds it nor releases it', async () => {
    const owners = join(root, 'owners-2');
    const path = join(root, 'lost', 'a.lock');
    const old = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(old);
    unlinkSync(path); // another process broke it while this one was paused, and let it go since
    const now = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(now);
    assert.equal(old.stillHeldSync(), false);
    assert.equal(await old.stillHeld(), false);
    assert.throws(() => old.assertHeldSync(), /taken over/);
    await old.release();
    assert.ok(existsSync(path), "the old holder's release leaves the new holder's lock");
    assert.ok(now.stillHeldSync());
    await now.release();
  });

  it('a lock linked to the record of a dead process is broken at once, and that record swept when a record is made', async () => {
    const owners = join(root, 'owners-3');
    mkdirSync(owners, { recursive: true });
    const pid = deadPid();
    const dead = join(owners, `${pid}-0123456789abcdef.owner`);
    writeFileSync(
      dead,
      `${JSON.stringify({ pid, host: hostname(), token: '0123456789abcdef', acquiredAt: new Date().toISOString() })}\n`,
    );
    const path = join(root, 'dead', 'a.lock');
    mkdirSync(join(root, 'dead'), { recursive: true });
    linkSync(dead, path);
    const lock = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(lock, 'taken over');
    assert.equal(lock.tookOver, true);
    assert.equal((await readLockOwner(path))?.pid, process.pid);
    assert.equal(existsSync(dead), false, "the dead process's record is gone");
    await lock.release();
  });

  it('a lock just taken is fresh however long the record went untouched', async () => {
    const owners = join(root, 'owners-4');
    const first = await LockFile.tryAcquire(join(root, 'fresh', 'a.lock'), { ownersDir: owners });
    assert.ok(first);
    await first.release();
    const [record] = recordsIn(owners);
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(join(owners, record!), hourAgo, hourAgo);
    const path = join(root, 'fresh', 'b.lock');
    const lock = await LockFile.tryAcquire(path, { ownersDir: owners, leaseMs: 1000 });
    assert.ok(lock);
    assert.ok(Date.now() - statSync(path).mtimeMs < 60_000, 'touched as it was taken');
    await lock.release();
  });

  it('the owners directory removed while the process runs: the next lock makes a new record', async () => {
    const owners = join(root, 'owners-5');
    const path = join(root, 'removed', 'a.lock');
    await (await LockFile.tryAcquire(path, { ownersDir: owners }))?.release();
    rmSync(owners, { recursive: true });
    const lock = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(lock);
    assert.equal(recordsIn(owners).length, 1);
    assert.equal(statSync(path).nlink, 2);
    await lock.release();
  });

  it('where links are refused (another file system), the lock is a file of its own', async (t) => {
    const shm = '/dev/shm';
    if (!existsSync(shm) || statSync(shm).dev === statSync(root).dev) {
      t.skip('no second file system to link across');
      return;
    }
    const owners = mkdtempSync(join(shm, 'svc-owners-'));
    try {
      const path = join(root, 'across', 'a.lock');
      const lock = await LockFile.tryAcquire(path, { ownersDir: owners });
      assert.ok(lock);
      assert.equal(statSync(path).nlink, 1, 'a file of its own');
      assert.equal((await readLockOwner(path))?.pid, process.pid);
      assert.equal(await LockFile.tryAcquire(path, { ownersDir: owners }), undefined);
      await lock.release();
      assert.equal(existsSync(path), false);
    } finally {
      rmSync(owners, { recursive: true, force: true });
    }
  });
});

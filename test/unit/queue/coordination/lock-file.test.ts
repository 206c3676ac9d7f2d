import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { waitFor } from '../../../helpers/wait.js';
import { LockFile, readLockOwner } from '../../../../src/queue/coordination/lock-file.js';
import { queuePaths } from '../../../../src/queue/file/queue-paths.js';
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

  it('a busy appender alone keeps its append lock past maxHoldMs', async () => {
    const paths = queuePaths(join(root, 'q1'), 'acme', 'alone');
    // A long linger: on a loaded machine a gap between batches must not let the lock go either,
    // so only a hand-back could change the holder.
    const appender = new SegmentAppender(paths, { maxHoldMs: 10, lingerMs: 5000 });
    await appender.append({ correlationId: 'first', payload: {} });
    const before = await readLockOwner(paths.appendLock);
    assert.ok(before, 'held after the first batch');
    await appendFor(appender, 120);
    const afterwards = await readLockOwner(paths.appendLock);
    assert.equal(afterwards?.token, before.token, 'never handed back: nobody waited');
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

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { HeldLock } from '../../../../src/queue/coordination/held-lock.js';
import { LockFile } from '../../../../src/queue/coordination/lock-file.js';
import { waitFor } from '../../../helpers/wait.js';

const root = mkdtempSync(join(tmpdir(), 'svc-held-lock-'));
after(() => rmSync(root, { recursive: true, force: true }));

const LEASE = 30_000;

/** A lock file as another process on this host would leave it: its owner line naming `pid`. */
function lockOf(path: string, pid: number): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ pid, host: hostname(), token: 'feedfacefeedface', acquiredAt: 'x' })}\n`);
}

describe('HeldLock: a lock seen held, judged again by one stat', () => {
  it('a free path is not remembered', () => {
    assert.equal(HeldLock.observe(join(root, 'none', 'a.lock'), LEASE), undefined);
  });

  it('held while the entry stays; not once released; held again when its holder takes it again', async () => {
    const owners = join(root, 'owners');
    const path = join(root, 'linked', 'a.lock');
    const lock = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(lock);
    const held = HeldLock.observe(path, LEASE);
    assert.ok(held, 'observed');
    assert.equal(held.owner.pid, process.pid);
    assert.equal(held.stillHeld(), true);
    await lock.release();
    assert.equal(held.stillHeld(), false, 'released');
    // The same process links the same owner record again: the same holder, alive, so held again
    // (tryAcquire would say so too).
    const again = await LockFile.tryAcquire(path, { ownersDir: owners });
    assert.ok(again);
    assert.equal(held.stillHeld(), true);
    await again.release();
  });

  it('not held once the entry is replaced by another, whatever its inode number', () => {
    const path = join(root, 'replaced', 'a.lock');
    lockOf(path, process.pid);
    const held = HeldLock.observe(path, LEASE);
    assert.ok(held);
    unlinkSync(path);
    lockOf(path, process.pid); // a new entry (the file system may well give it the freed inode number)
    assert.equal(held.stillHeld(), false);
  });

  it('not held past its lease (the holder stopped its heartbeat), nor observed so', () => {
    const path = join(root, 'stale', 'a.lock');
    lockOf(path, process.pid);
    const held = HeldLock.observe(path, 1000);
    assert.ok(held);
    const old = new Date(Date.now() - 5000);
    utimesSync(path, old, old);
    assert.equal(held.stillHeld(), false);
    assert.equal(HeldLock.observe(path, 1000), undefined);
  });

  it('not held once its owner process is gone (kill -9), nor observed when its owner is gone', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const pid = child.pid!;
    const gone = new Promise((r) => child.once('exit', r));
    const path = join(root, 'dead', 'a.lock');
    lockOf(path, pid);
    const held = HeldLock.observe(path, LEASE);
    assert.ok(held, 'its owner runs');
    assert.equal(held.stillHeld(), true);
    process.kill(pid, 'SIGKILL');
    await gone;
    await waitFor('the pid to be gone', () => !held.stillHeld(), 2000);
    assert.equal(HeldLock.observe(path, LEASE), undefined);
  });

  it('stillHeldSince answers from a look begun after `since`, and looks again for an earlier `since`', async () => {
    const path = join(root, 'since', 'a.lock');
    lockOf(path, process.pid);
    const before = performance.now();
    const held = HeldLock.observe(path, LEASE);
    assert.ok(held);
    unlinkSync(path); // let go after the look
    assert.equal(held.stillHeldSince(before), true, 'the look made after `before` answers');
    const after = performance.now();
    assert.equal(held.stillHeldSince(after), false, 'a look after `after` sees it gone');
    assert.equal(held.stillHeldSince(before), false, 'and a look that found it free answers for nobody');
  });

  it('an unreadable owner line is not remembered', () => {
    const path = join(root, 'torn', 'a.lock');
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, '{"pid":');
    assert.equal(HeldLock.observe(path, LEASE), undefined);
  });
});

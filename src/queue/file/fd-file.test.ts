import assert from 'node:assert/strict';
import { existsSync, fstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FdFile } from './fd-file.js';
import { readAt, writeAllSync } from './file-io.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-fd-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('FdFile', () => {
  it('reads an existing file by descriptor, synchronously opened, through the pool for large reads', async () => {
    const path = join(dir, 'read.log');
    writeFileSync(path, 'hello, queue');
    const f = await FdFile.open(path, 'read');
    assert.equal((await readAt(f, 7, 5)).toString(), 'queue');
    assert.equal((await readAt(f, 7, 100)).toString(), 'queue', 'a read past the end is cut short');
    f.close();
    assert.equal(f.fd, -1);
  });

  it('read mode does not create a missing file', async () => {
    const path = join(dir, 'missing.log');
    await assert.rejects(FdFile.open(path, 'read'), { code: 'ENOENT' });
    assert.equal(existsSync(path), false);
  });

  it('append mode creates a missing file, appends at the end whatever the position, and syncs', async () => {
    const path = join(dir, 'append.log');
    const f = await FdFile.open(path, 'append');
    writeAllSync(f, Buffer.from('one '));
    await f.datasync();
    f.close();
    const again = await FdFile.open(path, 'append');
    writeAllSync(again, Buffer.from('two'));
    again.truncateSync(6);
    await again.datasync();
    again.close();
    assert.equal(readFileSync(path, 'utf8'), 'one tw');
  });

  it('a close asked for while a sync runs in the pool waits for it: the descriptor number is not reused under it', async () => {
    const path = join(dir, 'busy.log');
    const f = await FdFile.open(path, 'append');
    const fd = f.fd;
    writeAllSync(f, Buffer.from('x'.repeat(4096)));
    const syncing = f.datasync();
    f.close();
    assert.doesNotThrow(() => fstatSync(fd), 'still open while the sync runs');
    await syncing;
    assert.throws(() => fstatSync(fd), { code: 'EBADF' });
    assert.equal(f.fd, -1);
  });

  it('refuses work once closed, and a second close is harmless', async () => {
    const path = join(dir, 'closed.log');
    const f = await FdFile.open(path, 'append');
    f.close();
    f.close();
    await assert.rejects(f.datasync(), { code: 'EBADF' });
    await assert.rejects(readAt(f, 0, 1), { code: 'EBADF' });
  });
});

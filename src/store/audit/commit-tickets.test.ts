import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StorageUnavailableError } from '../../common/errors.js';
import { CommitTickets } from './commit-tickets.js';

describe('CommitTickets', () => {
  it('resolves each wait once the entries up to its ticket are committed, in order', async () => {
    const t = new CommitTickets();
    const tickets = [t.issue(), t.issue(), t.issue()];
    const done: number[] = [];
    const waits = tickets.map((n) => t.wait(n, 1000).then(() => done.push(n)));
    t.committed(2);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(done, [1, 2]);
    t.committed(1);
    await Promise.all(waits);
    assert.deepEqual(done, [1, 2, 3]);
  });

  it('a ticket already committed resolves at once', async () => {
    const t = new CommitTickets();
    const n = t.issue();
    t.committed(1);
    await t.wait(n, 1000);
  });

  it('a wait past its time is refused as storage unavailable; the others still resolve', async () => {
    const t = new CommitTickets();
    const alive = setTimeout(() => undefined, 5000); // the wait's own timer does not hold the process
    const late = t.wait(t.issue(), 20);
    const second = t.issue();
    await assert.rejects(
      late,
      (err) => err instanceof StorageUnavailableError && /not committed within/.test(err.message),
    );
    const ok = t.wait(second, 1000);
    t.committed(2);
    await ok;
    clearTimeout(alive);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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

  it('a wait past its time ends without the commit; the others still wait for theirs', async () => {
    const t = new CommitTickets();
    const alive = setTimeout(() => undefined, 5000); // the wait's own timer does not hold the process
    const started = Date.now();
    await t.wait(t.issue(), 20);
    assert.ok(Date.now() - started >= 15);
    const second = t.issue();
    let done = false;
    const ok = t.wait(second, 1000).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(done, false);
    t.committed(2);
    await ok;
    clearTimeout(alive);
  });

  it('a patient wait asks the writer to hurry only once its patience is over, and not at all when committed before', async () => {
    const t = new CommitTickets();
    let hurried = 0;
    const hurry = () => hurried++;
    const first = t.issue();
    const early = t.waitPatient(first, 40, hurry);
    t.committed(1);
    await early;
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(hurried, 0, 'committed within its patience: never hurried');

    const second = t.issue();
    let done = false;
    const late = t.waitPatient(second, 20, hurry).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(hurried, 0, 'not before its patience is over');
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(hurried, 1, 'hurried once its patience is over');
    assert.equal(done, false, 'a hurry is no commit: the wait goes on');
    t.committed(1);
    await late;
    assert.equal(hurried, 1);
    assert.equal(await t.waitPatient(second, 1, hurry), undefined, 'a ticket already committed resolves at once');
    assert.equal(hurried, 1);
  });

  it('a failed batch ends every wait at once (the writer keeps the entries and tries again)', async () => {
    const t = new CommitTickets();
    const waits = [t.wait(t.issue(), 60_000), t.wait(t.issue(), 60_000)];
    t.failed();
    await Promise.all(waits);
  });
});

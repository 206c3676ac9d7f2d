import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QueueQuotaError } from '../../common/errors.js';
import type { TenantQueueUsage } from '../../queue/index.js';
import { NEW_QUEUE_BYTES, QueueQuota, quotaRefusal, RECHECK_MS, RECORD_OVERHEAD_BYTES } from './queue-quota.js';

const LIMITS = { maxQueues: 3, maxBytes: 100_000 };

describe('quotaRefusal', () => {
  const held = (flows: string[], bytes = 0) => ({ flows: new Set(flows), bytes });
  const cases: { name: string; flows: string[]; bytes: number; flow: string; add: number; refusal?: RegExp }[] = [
    { name: 'a new queue under the bound', flows: ['a', 'b'], bytes: 0, flow: 'c', add: 10 },
    {
      name: 'a new queue at the bound',
      flows: ['a', 'b', 'c'],
      bytes: 0,
      flow: 'd',
      add: 10,
      refusal: /^queue limit reached: tenant 't' has 3 queues \(max_queues_per_tenant 3\)$/,
    },
    { name: 'a queue the tenant has already, at the bound', flows: ['a', 'b', 'c'], bytes: 0, flow: 'b', add: 10 },
    { name: 'bytes up to the bound exactly', flows: ['a'], bytes: 99_990, flow: 'a', add: 10 },
    {
      name: 'one byte past the bound',
      flows: ['a'],
      bytes: 99_991,
      flow: 'a',
      add: 10,
      refusal:
        /^queue storage limit reached: tenant 't' queues take 99991 bytes \(max_queue_bytes_per_tenant 100000\)$/,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const r = quotaRefusal('t', held(c.flows, c.bytes), c.flow, c.add, LIMITS);
      if (c.refusal === undefined) assert.equal(r, undefined);
      else assert.match(r ?? '', c.refusal);
    });
});

/** A store whose usage the test sets, counting the reads. */
function fakeUsage(initial: TenantQueueUsage) {
  let usage = initial;
  let reads = 0;
  let gate: Promise<void> | undefined;
  return {
    set(u: TenantQueueUsage) {
      usage = u;
    },
    hold(p: Promise<void>) {
      gate = p;
    },
    get reads() {
      return reads;
    },
    usage: async () => {
      reads++;
      if (gate) await gate;
      return usage;
    },
  };
}

async function outcome(admit: () => void | Promise<void>): Promise<'ok' | string> {
  try {
    await admit();
    return 'ok';
  } catch (err) {
    assert.ok(err instanceof QueueQuotaError, String(err));
    assert.equal(err.status, 507);
    return err.message;
  }
}

describe('QueueQuota', () => {
  it('reads the store once on a first submission, then answers from memory', async () => {
    const store = fakeUsage({ flows: ['a'], bytes: 0 });
    const quota = new QueueQuota({ limits: LIMITS, usage: store.usage });
    assert.equal(await outcome(() => quota.admit('t', 'a', 10)), 'ok');
    assert.equal(quota.admit('t', 'a', 10), undefined, 'no promise once the ledger is at hand');
    assert.equal(store.reads, 1);
  });

  it('holds the queue bound exactly under concurrent first submissions to new queues', async () => {
    const store = fakeUsage({ flows: ['a', 'b'], bytes: 0 });
    let open!: () => void;
    store.hold(new Promise<void>((r) => (open = r)));
    const quota = new QueueQuota({ limits: LIMITS, usage: store.usage });
    const all = ['c', 'd', 'e', 'f'].map((f) => outcome(() => quota.admit('t', f, 1)));
    open();
    const results = await Promise.all(all);
    assert.deepEqual(
      results.map((r) => (r === 'ok' ? 'ok' : 'refused')),
      ['ok', 'refused', 'refused', 'refused'],
    );
    assert.equal(store.reads, 1, 'one read serves every submission waiting for it');
  });

  it('counts body, record overhead and a new queue against the byte bound', async () => {
    const store = fakeUsage({ flows: [], bytes: 0 });
    let now = 0;
    const quota = new QueueQuota({ limits: { maxQueues: 10, maxBytes: 50_000 }, usage: store.usage, now: () => now });
    assert.equal(await outcome(() => quota.admit('t', 'a', 1000)), 'ok');
    const used = 1000 + RECORD_OVERHEAD_BYTES + NEW_QUEUE_BYTES;
    const fit = Math.floor((50_000 - used) / (1000 + RECORD_OVERHEAD_BYTES));
    for (let i = 0; i < fit; i++) assert.equal(await outcome(() => quota.admit('t', 'a', 1000)), 'ok', `message ${i}`);
    assert.match(await outcome(() => quota.admit('t', 'a', 1000)), /max_queue_bytes_per_tenant 50000/);
    assert.equal(store.reads, 1, 'the store was read within RECHECK_MS: the ledger answers');
    now += RECHECK_MS;
    store.set({ flows: ['a'], bytes: 49_500 });
    assert.match(
      await outcome(() => quota.admit('t', 'a', 1000)),
      /queue storage limit reached: tenant 't' queues take 49500 bytes/,
    );
    assert.equal(store.reads, 2, 'past RECHECK_MS a bound reached is looked at again in the store');
  });

  it('admits again once the store says the tenant drained its bytes, after RECHECK_MS', async () => {
    const store = fakeUsage({ flows: ['a'], bytes: 99_950 });
    let now = 1_000_000;
    const quota = new QueueQuota({ limits: LIMITS, usage: store.usage, now: () => now });
    assert.match(await outcome(() => quota.admit('t', 'a', 1)), /queue storage limit reached/);
    store.set({ flows: ['a'], bytes: 0 });
    assert.match(
      await outcome(() => quota.admit('t', 'a', 1)),
      /storage limit/,
      'within RECHECK_MS: the ledger answers',
    );
    now += RECHECK_MS;
    assert.equal(await outcome(() => quota.admit('t', 'a', 1)), 'ok');
    assert.equal(store.reads, 2);
  });

  it('a queue known here keeps counting when a read of the store has not seen it yet (queues never go away)', async () => {
    const store = fakeUsage({ flows: ['a', 'b'], bytes: 0 });
    let now = 0;
    const quota = new QueueQuota({ limits: LIMITS, usage: store.usage, now: () => now });
    assert.equal(await outcome(() => quota.admit('t', 'c', 1)), 'ok', 'the third queue, its write still under way');
    now += RECHECK_MS;
    // The store, read before c's directory exists, still says two: c must count all the same.
    assert.match(await outcome(() => quota.admit('t', 'd', 1)), /has 3 queues/);
    assert.equal(store.reads, 2);
  });

  it('keeps tenants apart', async () => {
    const store = fakeUsage({ flows: ['a', 'b', 'c'], bytes: 0 });
    const quota = new QueueQuota({
      limits: LIMITS,
      usage: async (t) => (t === 'full' ? store.usage() : { flows: [], bytes: 0 }),
    });
    assert.match(await outcome(() => quota.admit('full', 'd', 1)), /tenant 'full'/);
    assert.equal(await outcome(() => quota.admit('other', 'd', 1)), 'ok');
  });

  it('near a bound, reads the store again in the background (what other processes added)', async () => {
    const store = fakeUsage({ flows: [], bytes: 0 });
    let now = 0;
    const quota = new QueueQuota({
      limits: { maxQueues: 10, maxBytes: 1_000_000 },
      usage: store.usage,
      now: () => now,
    });
    for (const f of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'])
      assert.equal(await outcome(() => quota.admit('t', f, 1)), 'ok');
    assert.equal(store.reads, 1);
    now += RECHECK_MS;
    store.set({ flows: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'x', 'y'], bytes: 0 });
    assert.equal(await outcome(() => quota.admit('t', 'i', 1)), 'ok', 'the ninth queue: 90% of the bound');
    await new Promise((r) => setImmediate(r));
    assert.equal(store.reads, 2, 'a background read');
    assert.match(await outcome(() => quota.admit('t', 'j', 1)), /has 11 queues/, 'x and y, added elsewhere, now count');
  });

  it('a store that cannot be read fails the submission (a 500 at the door), and the next one reads again', async () => {
    let fail = true;
    const quota = new QueueQuota({
      limits: LIMITS,
      usage: async () => {
        if (fail) throw new Error('EIO');
        return { flows: [], bytes: 0 };
      },
    });
    await assert.rejects(async () => quota.admit('t', 'a', 1), /EIO/);
    fail = false;
    assert.equal(await outcome(() => quota.admit('t', 'a', 1)), 'ok');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitedMs, WorkerSlots, type SlotLimits } from './worker-slots.js';

const LIMITS: SlotLimits = { maxWorkers: 2, maxPerTenant: 2, idleMs: 1000, turnMs: 2000 };
const q = (key: string) => ({ tenant: key.split('/')[0]!, flow: key.split('/')[1]! });

/** Puts each queue in line at `now` (ready now) and takes slots while it can; the keys given slots, in order. */
function fill(slots: WorkerSlots, keys: readonly string[], now = 0): string[] {
  for (const k of keys) slots.wait(q(k), 0, now);
  const got: string[] = [];
  for (let t = slots.take(now); t !== undefined; t = slots.take(now)) got.push(t.key);
  return got;
}

/** Releases `key` and takes the next slot: who got it. */
function handOver(slots: WorkerSlots, key: string, now: number): string | undefined {
  slots.release(key);
  return slots.take(now)?.key;
}

describe('WorkerSlots: who gets a slot', () => {
  const cases: {
    name: string;
    limits?: Partial<SlotLimits>;
    line: string[];
    first: string[];
    /** Released one at a time after the first fill: who gets each freed slot. */
    then?: { release: string; gets: string | undefined }[];
  }[] = [
    { name: 'no more than max_queue_workers at once', line: ['a/1', 'a/2', 'a/3'], first: ['a/1', 'a/2'] },
    {
      name: 'tenants take turns before queues: a tenant with many queues does not starve one with one',
      limits: { maxWorkers: 1 },
      line: ['big/1', 'big/2', 'big/3', 'small/1'],
      first: ['big/1'],
      then: [
        { release: 'big/1', gets: 'small/1' },
        { release: 'small/1', gets: 'big/2' },
        { release: 'big/2', gets: 'big/3' },
        { release: 'big/3', gets: undefined },
      ],
    },
    {
      name: 'a tenant at max_queue_workers_per_tenant waits while another tenant is served',
      limits: { maxWorkers: 3, maxPerTenant: 1 },
      line: ['a/1', 'a/2', 'b/1', 'b/2'],
      first: ['a/1', 'b/1'],
      then: [{ release: 'a/1', gets: 'a/2' }],
    },
    {
      name: 'three tenants in turn',
      limits: { maxWorkers: 1 },
      line: ['a/1', 'a/2', 'b/1', 'c/1', 'c/2'],
      first: ['a/1'],
      then: [
        { release: 'a/1', gets: 'b/1' },
        { release: 'b/1', gets: 'c/1' },
        { release: 'c/1', gets: 'a/2' },
        { release: 'a/2', gets: 'c/2' },
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const slots = new WorkerSlots({ ...LIMITS, ...c.limits });
      assert.deepEqual(fill(slots, c.line), c.first);
      for (const step of c.then ?? [])
        assert.equal(handOver(slots, step.release, 1), step.gets, `after ${step.release}`);
      assert.ok(slots.held <= slots.limits.maxWorkers);
    });
  }

  it('a queue holding a slot or already waiting is not put in line twice; the earlier readiness is kept', () => {
    const slots = new WorkerSlots({ ...LIMITS, maxWorkers: 1 });
    fill(slots, ['a/1']);
    slots.wait(q('a/1'), 0, 0);
    assert.equal(slots.waitingCount, 0);
    slots.wait(q('a/2'), 500, 0);
    slots.wait(q('a/2'), 300, 10);
    slots.wait(q('a/2'), 400, 20);
    assert.equal(slots.waitingCount, 1);
    assert.equal(slots.nextReadyAt(0), 300);
  });

  it('a queue whose retry is not due yet is not given a slot before it is, and has not waited until then', () => {
    const slots = new WorkerSlots(LIMITS);
    slots.wait(q('a/1'), 5000, 0);
    assert.equal(slots.take(4999), undefined);
    assert.deepEqual(slots.waitingNow(4999), []);
    assert.equal(slots.nextReadyAt(4999), 5000);
    const waiting = slots.waitingNow(6000);
    assert.equal(waiting.length, 1);
    assert.equal(waitedMs(waiting[0]!, 6000), 1000);
    assert.equal(slots.take(6000)?.key, 'a/1');
  });

  it('forget takes a queue out of line', () => {
    const slots = new WorkerSlots(LIMITS);
    slots.wait(q('a/1'), 0, 0);
    slots.forget('a', 'a/1');
    assert.equal(slots.waitingCount, 0);
    assert.equal(slots.take(0), undefined);
  });
});

describe('WorkerSlots: who gives a slot back', () => {
  const cases: {
    name: string;
    limits?: Partial<SlotLimits>;
    /** Holders with [idle since | undefined for delivering], got at time 0. */
    holders: [string, number | undefined][];
    waiting?: string[];
    now: number;
    leave: string[];
  }[] = [
    {
      name: 'nobody while nothing waits and nobody is idle long',
      holders: [
        ['a/1', 500],
        ['a/2', undefined],
      ],
      now: 1400,
      leave: [],
    },
    {
      name: 'an idle worker after queue_worker_idle_ms, though nothing waits',
      holders: [
        ['a/1', 500],
        ['a/2', undefined],
      ],
      now: 1500,
      leave: ['a/1'],
    },
    {
      name: 'an idle worker at once when a queue waits',
      holders: [
        ['a/1', 100],
        ['a/2', undefined],
      ],
      waiting: ['b/1'],
      now: 150,
      leave: ['a/1'],
    },
    {
      name: 'a busy worker after its turn while a queue waits, not before',
      holders: [
        ['a/1', undefined],
        ['a/2', undefined],
      ],
      waiting: ['b/1'],
      now: 1999,
      leave: [],
    },
    {
      name: 'only as many busy workers as there are queues waiting',
      holders: [
        ['a/1', undefined],
        ['a/2', undefined],
      ],
      waiting: ['b/1'],
      now: 2000,
      leave: ['a/1'],
    },
    {
      name: 'nobody for a queue whose tenant is at its own ceiling, unless it gives the slot itself',
      limits: { maxWorkers: 3, maxPerTenant: 1 },
      holders: [
        ['a/1', undefined],
        ['b/1', 2000],
      ],
      waiting: ['a/2'],
      now: 2500,
      leave: ['a/1'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const slots = new WorkerSlots({ ...LIMITS, ...c.limits });
      fill(
        slots,
        c.holders.map(([k]) => k),
      );
      for (const [k, idleSince] of c.holders) if (idleSince !== undefined) slots.idle(k, idleSince);
      for (const k of c.waiting ?? []) slots.wait(q(k), 0, 0);
      assert.deepEqual(
        slots.leavers(c.now).map((h) => h.key),
        c.leave,
      );
      // Named once: a leaver is not named again while it finishes.
      assert.deepEqual(slots.leavers(c.now), []);
    });
  }

  it('a worker delivering again is no longer idle', () => {
    const slots = new WorkerSlots(LIMITS);
    fill(slots, ['a/1']);
    slots.idle('a/1', 0);
    slots.busy('a/1');
    assert.deepEqual(slots.leavers(5000), []);
  });
});

describe('WorkerSlots: when a leaver frees its slot', () => {
  it('an idle leaver at once: the waiting queue starts while it closes, and it is not put in line meanwhile', () => {
    const slots = new WorkerSlots(LIMITS);
    fill(slots, ['a/1', 'a/2']);
    slots.idle('a/1', 100);
    slots.wait(q('b/1'), 0, 100);
    assert.deepEqual(
      slots.leavers(150).map((h) => h.key),
      ['a/1'],
    );
    assert.equal(slots.held, 1, 'its slot is free while it closes');
    assert.equal(slots.take(150)?.key, 'b/1');
    assert.equal(slots.held, 2);
    assert.ok(slots.holds('a/1'), 'still held: not started again until it has closed');
    slots.wait(q('a/1'), 0, 160);
    assert.equal(slots.isWaiting('a', 'a/1'), false);
    slots.release('a/1');
    assert.equal(slots.held, 2, 'releasing a freed slot frees nothing more');
    assert.equal(slots.take(170), undefined);
  });

  it('a busy leaver when it has closed: its delivery in flight still counts against the ceilings', () => {
    const slots = new WorkerSlots({ ...LIMITS, maxPerTenant: 2 });
    fill(slots, ['a/1', 'a/2']);
    slots.wait(q('b/1'), 0, 0);
    assert.deepEqual(
      slots.leavers(2000).map((h) => h.key),
      ['a/1'],
    );
    assert.equal(slots.held, 2);
    assert.equal(slots.take(2000), undefined);
    assert.deepEqual(slots.leavers(2001), [], 'the waiting queue has a slot coming: nobody else is asked to leave');
    slots.release('a/1');
    assert.equal(slots.take(2002)?.key, 'b/1');
  });

  it("an idle leaver's tenant is under its own ceiling at once", () => {
    const slots = new WorkerSlots({ ...LIMITS, maxWorkers: 3, maxPerTenant: 1 });
    fill(slots, ['a/1']);
    slots.idle('a/1', 0);
    slots.wait(q('a/2'), 0, 0);
    assert.deepEqual(
      slots.leavers(10).map((h) => h.key),
      ['a/1'],
    );
    assert.equal(slots.take(10)?.key, 'a/2');
  });
});

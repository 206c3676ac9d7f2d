import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../common/logger.js';
import type { QueueBacklog, QueueConsumerHandle, QueueStore } from '../../queue/index.js';
import { QueuePool } from './queue-pool.js';

/**
 * A queue backend whose worker starts take as long as the test says (a start on PostgreSQL takes
 * the queue's lock over the network; a process paused meanwhile resumes with every turn past).
 * It counts the workers running at once, which the pool must keep within max_queue_workers.
 */
function slowStartStore() {
  const running = new Map<string, QueueConsumerHandle>();
  const pendingStarts: (() => void)[] = [];
  let most = 0;
  let elsewhere = false;
  let starts = 0;
  const store = {
    adoptsOrphans: false,
    servedElsewhereNow: () => elsewhere,
    startConsumer: async (tenant: string, flow: string) => {
      starts++;
      await new Promise<void>((resolve) => pendingStarts.push(resolve));
      const key = `${tenant}/${flow}`;
      let state: QueueConsumerHandle['state'] = 'running';
      const handle: QueueConsumerHandle = {
        get state() {
          return state;
        },
        stats: () => Promise.reject(new Error('not used')),
        close: async () => {
          state = 'closed';
          running.delete(key);
        },
        finish: async (): Promise<QueueBacklog | undefined> => {
          await handle.close();
          return undefined;
        },
      };
      running.set(key, handle);
      most = Math.max(most, running.size);
      return handle;
    },
    consumer: (tenant: string, flow: string) => running.get(`${tenant}/${flow}`),
    backlogOf: async () => undefined,
  } as unknown as QueueStore;
  return {
    store,
    running,
    most: () => most,
    /** Lets every start asked for so far finish. */
    finishStarts: () => pendingStarts.splice(0).forEach((r) => r()),
    startsPending: () => pendingStarts.length,
    /** How many starts were asked for. */
    starts: () => starts,
    /** What servedElsewhereNow answers from now on. */
    servedElsewhere: (yes: boolean) => {
      elsewhere = yes;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A pool of one worker slot over `store`, each worker's turn `turnMs` long. */
function oneSlotPool(store: QueueStore, turnMs: number): QueuePool {
  return new QueuePool({
    store,
    limits: { maxWorkers: 1, maxPerTenant: 1, idleMs: 60_000, turnMs },
    workerOptions: () => ({ handler: async () => ({ kind: 'ack' }) }) as never,
    log: createLogger({ LOG_LEVEL: 'silent' }),
  });
}

test('a worker named to leave while it is still starting keeps its slot until it has started and finished: never more workers than slots', async () => {
  const backend = slowStartStore();
  const pool = oneSlotPool(backend.store, 1);
  try {
    void pool.ensure('acme', 'first');
    assert.equal(backend.startsPending(), 1);
    // Another queue waits; the first's turn (1 ms) passes while its start is still under way, and
    // the pool's tick (100 ms) names it to leave.
    void pool.ensure('acme', 'second');
    await sleep(250);
    assert.equal(backend.startsPending(), 1, 'the slot is not given to the second queue while the first is starting');
    backend.finishStarts();
    for (let i = 0; i < 20 && backend.startsPending() === 0; i++) await sleep(25);
    backend.finishStarts();
    await sleep(50);
    assert.equal(backend.most(), 1, 'at most max_queue_workers workers at once');
    assert.deepEqual([...backend.running.keys()], ['acme/second']);
  } finally {
    pool.close();
  }
});

test('a queue the store knows is served by another live process is left to it: no start asked, no slot taken', async () => {
  const backend = slowStartStore();
  const pool = oneSlotPool(backend.store, 60_000);
  try {
    backend.servedElsewhere(true);
    assert.equal(await pool.ensure('acme', 'held'), 'elsewhere');
    assert.equal(backend.starts(), 0);
    assert.equal(pool.workerCount, 0);
    // Its holder let it go: the next submission asks for a start.
    backend.servedElsewhere(false);
    const started = pool.ensure('acme', 'held');
    assert.equal(backend.starts(), 1);
    backend.finishStarts();
    assert.equal(await started, 'started');
  } finally {
    pool.close();
  }
});

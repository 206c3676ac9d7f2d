/**
 * The bounded pool of queue workers of one process: does what WorkerSlots decides. A queue with
 * work asks for a slot (ensure); when one is free its worker starts on the queue backend; a worker
 * gives its slot back by finishing after its delivery in flight (never abandoning it; an idle one's
 * slot goes to the next queue while it closes its files), and the queue, if it still holds
 * messages, joins the line again once it has closed. One worker per queue across processes
 * and nodes stays the backend's lock: a queue whose lock another process holds is left to it.
 */
import type { Logger } from '../../common/logger.js';
import { LogThrottle } from '../../common/log-throttle.js';
import type { QueueBacklog, QueueConsumerOptions, QueueStore } from '../../queue/index.js';
import { queueKey, waitedMs, WorkerSlots, type HeldQueue, type QueueRef, type SlotLimits } from './worker-slots.js';

/**
 * On a store whose queues a periodic sweep hands over (QueueStore.adoptsOrphans: PostgreSQL), how
 * long a queue found run by another node is not asked about again. Milliseconds. That node may give
 * its slot back meanwhile, after reading the queue's backlog, and a message appended then waits
 * for the sweep (serve/queues.ts ORPHAN_SWEEP_MS). On files every submission asks (no sweep would
 * serve it), by a stat of the lock while the holder found last time keeps it (HeldLock).
 */
const ELSEWHERE_RECHECK_MS = 1000;
/** How often the pool looks for workers past their idle time or turn, and retries coming due. Milliseconds. */
const TICK_MS = 100;
/** A queue whose worker could not be started (a storage error) is tried again after this. Milliseconds. */
const START_RETRY_MS = 1000;

/** Whether a queue is served after `ensure`. */
export type WorkerStatus = 'running' | 'started' | 'waiting' | 'elsewhere' | 'stopped';

/** A queue waiting for a slot, as /metrics and the UI show it. */
export interface QueueWait extends QueueRef {
  /** How long it has waited with something to deliver. Milliseconds. */
  readonly waitedMs: number;
}

export interface QueuePoolDeps {
  readonly store: QueueStore;
  readonly limits: SlotLimits;
  /** The worker's options for a queue (handler, reports); the pool adds its own onIdle and wraps onLockLost. */
  workerOptions(tenant: string, flow: string): QueueConsumerOptions;
  readonly log: Logger;
}

export class QueuePool {
  readonly #deps: QueuePoolDeps;
  readonly #slots: WorkerSlots;
  /** Queues consumed by another live process: when we asked last. */
  readonly #elsewhere = new Map<string, number>();
  /** Workers being started (their slot is held). */
  readonly #starting = new Map<string, Promise<WorkerStatus>>();
  /** Workers giving their slot back. */
  readonly #leaving = new Map<string, Promise<void>>();
  readonly #tick: NodeJS.Timeout;
  /** One line about queues waiting for a slot per 10 s at most (a thousand queues may wait at once). */
  readonly #waitLine = new LogThrottle();
  #stopped = false;

  constructor(deps: QueuePoolDeps) {
    this.#deps = deps;
    this.#slots = new WorkerSlots(deps.limits);
    this.#tick = setInterval(() => this.#rebalance(), TICK_MS).unref();
  }

  /** Workers this process runs (or is starting). */
  get workerCount(): number {
    return this.#slots.held;
  }

  /** True when this process's worker holds the queue's slot (the hot path of a submission: no promise made). */
  holds(tenant: string, flow: string): boolean {
    return this.#slots.holds(queueKey(tenant, flow));
  }

  /**
   * Makes sure the queue is served: running here already, started now, waiting in line for a
   * slot, or run by another live process. `readyAt` (epoch ms): when it has something to deliver.
   */
  ensure(tenant: string, flow: string, readyAt = 0): Promise<WorkerStatus> {
    const key = queueKey(tenant, flow);
    // The hot path of every /enqueue to a served queue: one lookup, no await.
    if (this.#slots.holds(key)) return this.#starting.get(key) ?? Promise.resolve('running');
    if (this.#stopped) return Promise.resolve('stopped');
    // Another live process runs it and still holds its lock (a stat on files): nothing to start.
    if (this.#deps.store.servedElsewhereNow(tenant, flow)) return Promise.resolve('elsewhere');
    const now = Date.now();
    if (this.#askedRecently(key, now)) return Promise.resolve('elsewhere');
    this.#slots.wait({ tenant, flow }, readyAt, now);
    // A free slot, or one an idle worker gives back at once.
    this.#rebalance();
    const starting = this.#starting.get(key);
    if (starting !== undefined) return starting;
    if (this.#slots.holds(key)) return Promise.resolve('running');
    this.#reportWaiting();
    return Promise.resolve('waiting');
  }

  /**
   * Serves every queue of `backlogs` (the queues holding messages at start, or a dead node's):
   * each joins the line, and the free slots are given out.
   * @returns how many queues joined the line (not held here, not just found run elsewhere)
   */
  adopt(backlogs: readonly QueueBacklog[]): number {
    if (this.#stopped) return 0;
    // All join the line before any slot is given: the first slots go by the fairness rule too, not
    // to the queues listed first.
    const now = Date.now();
    let lined = 0;
    for (const b of backlogs) {
      const key = queueKey(b.tenant, b.flow);
      if (this.#slots.holds(key) || this.#askedRecently(key, now)) continue;
      this.#slots.wait(b, b.readyAt, now);
      lined++;
    }
    this.#rebalance();
    if (this.#slots.waitingCount > 0) this.#reportWaiting();
    return lined;
  }

  /** A queue found run by another node within ELSEWHERE_RECHECK_MS is not asked about again (PostgreSQL only). */
  #askedRecently(key: string, now: number): boolean {
    const askedAt = this.#elsewhere.get(key);
    return askedAt !== undefined && now - askedAt < ELSEWHERE_RECHECK_MS;
  }

  /** The worker of the queue (by its `queueKey`) delivers a message (it is not idle). */
  delivering(key: string): void {
    this.#slots.busy(key);
  }

  /** The queues waiting for a slot with something to deliver now, longest first. */
  waiting(): QueueWait[] {
    const now = Date.now();
    return this.#slots.waitingNow(now).map((q) => ({ tenant: q.tenant, flow: q.flow, waitedMs: waitedMs(q, now) }));
  }

  /** Tells the operator that queues wait for a slot (at most one line per 10 s, with how many lines were held back). */
  #reportWaiting(): void {
    const line = this.#waitLine.admit('waiting');
    if (line === undefined) return;
    const { maxWorkers, maxPerTenant } = this.#deps.limits;
    const waiting = this.#slots.waitingCount;
    this.#deps.log.warn(
      { waiting, max_queue_workers: maxWorkers, max_queue_workers_per_tenant: maxPerTenant, held_back: line.heldBack },
      `${waiting} queue(s) wait for a worker slot (max_queue_workers ${maxWorkers}, per tenant ${maxPerTenant}); they are served in turn`,
    );
  }

  /** Stops starting workers; the store's close() stops the running ones and releases their locks. */
  close(): void {
    this.#stopped = true;
    clearInterval(this.#tick);
    this.#slots.clearWaiting();
  }

  /** Starts a worker for each queue given a free slot. */
  #pump(now: number): void {
    if (this.#stopped) return;
    for (let q = this.#slots.take(now); q !== undefined; q = this.#slots.take(now)) {
      const { key } = q;
      const p = this.#start(q).finally(() => this.#starting.delete(key));
      this.#starting.set(key, p);
    }
  }

  /** Lets go the workers WorkerSlots names (idle, or past their turn while a queue waits), then fills free slots. */
  #rebalance(): void {
    if (this.#stopped) return;
    const now = Date.now();
    for (const q of this.#slots.leavers(now)) this.#leave(q);
    this.#pump(now);
  }

  async #start(q: HeldQueue): Promise<WorkerStatus> {
    const { tenant, flow, key } = q;
    let started;
    try {
      started = await this.#deps.store.startConsumer(tenant, flow, {
        ...this.#deps.workerOptions(tenant, flow),
        onIdle: () => this.#onIdle(key),
        onLockLost: () => this.#onLockLost(q),
      });
    } catch (err) {
      this.#deps.log.error({ err, tenant, flow }, 'queue worker could not be started; trying again in 1 s');
      this.#slots.release(key);
      if (!this.#stopped) this.#slots.wait(q, Date.now() + START_RETRY_MS, Date.now());
      return 'waiting';
    }
    if (started === undefined) {
      // Another process (or node) runs it: its lock is the rule, and its slot goes to another queue.
      this.#slots.release(key);
      if (this.#deps.store.adoptsOrphans) this.#elsewhere.set(key, Date.now());
      this.#pump(Date.now());
      return 'elsewhere';
    }
    this.#elsewhere.delete(key);
    if (this.#stopped) await started.close().catch(() => undefined);
    return 'started';
  }

  #onIdle(key: string): void {
    const now = Date.now();
    this.#slots.idle(key, now);
    // A queue waiting for a slot gets this one at once.
    if (this.#slots.waitingCount > 0) this.#rebalance();
  }

  #onLockLost(q: HeldQueue): void {
    // Paused or stalled past the lease: another process runs this queue now, and this one
    // stopped before delivering anything more.
    this.#slots.release(q.key);
    if (this.#deps.store.adoptsOrphans) this.#elsewhere.set(q.key, Date.now());
    this.#deps.log.warn(
      { tenant: q.tenant, flow: q.flow },
      'queue worker lock lost (this process was paused or stalled past the lease); another process runs the queue now',
    );
    this.#pump(Date.now());
  }

  /** The worker of `key` finishes after its delivery in flight; the queue joins the line again if it holds messages. */
  #leave({ tenant, flow, key }: HeldQueue): void {
    if (this.#leaving.has(key)) return;
    const p = (async () => {
      // Named while its worker is still starting (a start on PostgreSQL takes the queue's lock over
      // the network, and a process resumed from a pause finds every turn past): the backend knows
      // no worker yet, and freeing the slot now let a successor start beside the worker once its
      // start finished: 9 and 10 calls in flight from two pools of 4 (test/queue-pool.test.ts,
      // about 1 run in 7 on PostgreSQL), and that worker then ran outside the pool for good. The
      // slot is kept until the start is over; a start that did not start a worker gave it back.
      const starting = this.#starting.get(key);
      if (starting !== undefined && (await starting) !== 'started') return;
      // What the queue still holds, read after its lock is released: a message appended before
      // is seen here, one appended after finds the lock free and its submitter serves it.
      let backlog: QueueBacklog | undefined | 'unknown';
      try {
        const worker = this.#deps.store.consumer(tenant, flow);
        backlog = worker === undefined ? 'unknown' : await worker.finish();
      } catch (err) {
        this.#deps.log.error({ err, tenant, flow }, 'queue worker could not give its slot back cleanly');
        backlog = 'unknown';
      }
      this.#slots.release(key);
      if (this.#stopped) return;
      if (backlog === 'unknown') {
        try {
          backlog = await this.#deps.store.backlogOf(tenant, flow);
        } catch (err) {
          this.#deps.log.error({ err, tenant, flow }, 'queue backlog unreadable; the queue waits for a slot again');
        }
      }
      if (this.#stopped) return;
      const now = Date.now();
      if (backlog === 'unknown') this.#slots.wait({ tenant, flow }, now, now);
      else if (backlog !== undefined) this.#slots.wait({ tenant, flow }, backlog.readyAt, now);
      this.#pump(now);
    })().finally(() => this.#leaving.delete(key));
    this.#leaving.set(key, p);
  }
}

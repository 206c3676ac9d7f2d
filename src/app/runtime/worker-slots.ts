/**
 * The bounded pool of queue workers as a pure decision (no I/O, no timers, the clock passed in):
 * which queues hold a slot, which wait for one and since when, which waiting queue takes the next
 * free slot, and when a worker should give its slot back. QueueWorkers does what it decides.
 *
 * The fairness rule: tenants take turns (round robin, in the order they first waited), and within
 * a tenant its queues take turns in the order they started waiting. A queue is startable once it
 * is ready (a future retry is not) and its tenant is under its own ceiling. A worker gives its slot
 * back when it has been idle for `idleMs`, at once when it is idle and a queue waits that could use
 * the slot, and after `turnMs` of work while such a queue waits (it then waits at the back itself).
 * An idle worker named to leave delivers nothing more, so its slot is free at once (it counts
 * against no ceiling while it closes its files); a busy one keeps its slot until its delivery in
 * flight is done and it has closed. Either way the queue is not started again until it has closed.
 */

export interface SlotLimits {
  /** Slots of the process (max_queue_workers). */
  readonly maxWorkers: number;
  /** Slots one tenant may hold at once (max_queue_workers_per_tenant). */
  readonly maxPerTenant: number;
  /** Idle time after which a worker gives its slot back although nobody waits. Milliseconds. */
  readonly idleMs: number;
  /** Longest a worker keeps its slot while another queue waits for one. Milliseconds. */
  readonly turnMs: number;
}

/** A queue as the pool knows it. */
export interface QueueRef {
  readonly tenant: string;
  readonly flow: string;
}

/** A queue waiting for a slot. */
export interface WaitingQueue extends QueueRef {
  readonly key: string;
  /** When it has something to deliver: now or earlier for waiting messages, later for a scheduled retry. Epoch ms. */
  readonly readyAt: number;
  /** When it joined the line. Epoch ms. */
  readonly since: number;
}

/** How long a waiting queue has waited for a slot with something to deliver (0 before it is ready). Milliseconds. */
export const waitedMs = (q: WaitingQueue, now: number): number => Math.max(0, now - Math.max(q.since, q.readyAt));

/** A queue holding a slot, with its key. */
export interface HeldQueue extends QueueRef {
  readonly key: string;
}

interface Holder extends QueueRef {
  /** When it got its slot. Epoch ms. */
  readonly since: number;
  /** When it last found nothing to deliver (undefined: delivering). Epoch ms. */
  idleSince: number | undefined;
  /** Giving its slot back: the worker is finishing. */
  leaving: boolean;
  /** Leaving with nothing in flight: its slot is free already, while its worker closes. */
  slotFree: boolean;
}

export const queueKey = (tenant: string, flow: string): string => `${tenant}/${flow}`;

export class WorkerSlots {
  readonly limits: SlotLimits;
  /** Queues held: served, or leaving (closing). */
  readonly #holders = new Map<string, Holder>();
  /** Holders whose slot is free already (see Holder.slotFree). */
  #freeCount = 0;
  /** Slots held per tenant (those free already not counted). */
  readonly #perTenant = new Map<string, number>();
  /** Waiting queues per tenant, in the order they started waiting; tenants in the order they first waited. */
  readonly #waiting = new Map<string, Map<string, WaitingQueue>>();
  #waitingCount = 0;

  constructor(limits: SlotLimits) {
    this.limits = limits;
  }

  /** Slots held (an idle worker that is leaving has freed its slot already). */
  get held(): number {
    return this.#holders.size - this.#freeCount;
  }

  get waitingCount(): number {
    return this.#waitingCount;
  }

  /** True while the queue is served here, or its worker is still closing. */
  holds(key: string): boolean {
    return this.#holders.has(key);
  }

  isWaiting(tenant: string, key: string): boolean {
    return this.#waiting.get(tenant)?.has(key) ?? false;
  }

  /**
   * Puts a queue in line for a slot (nothing when it holds one or waits already; an earlier
   * `readyAt` is kept).
   */
  wait(q: QueueRef, readyAt: number, now: number): void {
    const key = queueKey(q.tenant, q.flow);
    if (this.#holders.has(key)) return;
    let line = this.#waiting.get(q.tenant);
    if (line === undefined) this.#waiting.set(q.tenant, (line = new Map()));
    const was = line.get(key);
    if (was !== undefined) {
      if (readyAt < was.readyAt) line.set(key, { ...was, readyAt });
      return;
    }
    line.set(key, { tenant: q.tenant, flow: q.flow, key, readyAt, since: now });
    this.#waitingCount++;
  }

  /** Takes a queue out of line (its worker runs elsewhere, or the process stops). */
  forget(tenant: string, key: string): void {
    const line = this.#waiting.get(tenant);
    if (line?.delete(key)) {
      this.#waitingCount--;
      if (line.size === 0) this.#waiting.delete(tenant);
    }
  }

  /**
   * The next queue to get a free slot, by the fairness rule, moved from the line to a slot (the
   * slot counts from now, before its worker has started: the ceiling is never overshot). Undefined
   * when no slot is free or nothing startable waits.
   */
  take(now: number): WaitingQueue | undefined {
    if (this.held >= this.limits.maxWorkers) return undefined;
    const next = this.#nextStartable(now, undefined);
    if (next === undefined) return undefined;
    this.forget(next.tenant, next.key);
    // Its tenant goes to the back of the turn order.
    const line = this.#waiting.get(next.tenant);
    if (line !== undefined) {
      this.#waiting.delete(next.tenant);
      this.#waiting.set(next.tenant, line);
    }
    this.#holders.set(next.key, {
      tenant: next.tenant,
      flow: next.flow,
      since: now,
      idleSince: undefined,
      leaving: false,
      slotFree: false,
    });
    this.#perTenant.set(next.tenant, (this.#perTenant.get(next.tenant) ?? 0) + 1);
    return next;
  }

  /** Forgets the queue held by `key` (its worker has stopped, or could not start), freeing its slot if not yet free. */
  release(key: string): void {
    const h = this.#holders.get(key);
    if (h === undefined) return;
    this.#holders.delete(key);
    if (h.slotFree) this.#freeCount--;
    else this.#freeSlot(h);
  }

  /** Frees the slot of a holder: it counts against no ceiling from now. */
  #freeSlot(h: Holder): void {
    const n = (this.#perTenant.get(h.tenant) ?? 1) - 1;
    if (n > 0) this.#perTenant.set(h.tenant, n);
    else this.#perTenant.delete(h.tenant);
  }

  /** The worker of `key` found nothing to deliver now (kept from the first such moment). */
  idle(key: string, now: number): void {
    const h = this.#holders.get(key);
    if (h !== undefined && h.idleSince === undefined) h.idleSince = now;
  }

  /** The worker of `key` delivers again. */
  busy(key: string): void {
    const h = this.#holders.get(key);
    if (h !== undefined) h.idleSince = undefined;
  }

  /**
   * The workers that should give their slot back now (each marked leaving, so it is named once;
   * an idle one's slot is freed at once): idle for idleMs; idle while a waiting queue could use the
   * slot; or working for turnMs while one could. At most as many go for waiting queues as there
   * are ready ones.
   */
  leavers(now: number): HeldQueue[] {
    const out: HeldQueue[] = [];
    let wanted = this.#readyCount(now);
    for (const [key, h] of this.#holders) {
      if (h.leaving) {
        // A busy one's slot is about to be free: one waiting queue fewer needs another.
        if (!h.slotFree && wanted > 0) wanted--;
        continue;
      }
      const idleFor = h.idleSince === undefined ? -1 : now - h.idleSince;
      let leave = idleFor >= this.limits.idleMs;
      if (!leave && wanted > 0 && (idleFor >= 0 || now - h.since >= this.limits.turnMs)) {
        leave = this.#nextStartable(now, h.tenant) !== undefined;
      }
      if (leave) {
        h.leaving = true;
        if (idleFor >= 0) {
          h.slotFree = true;
          this.#freeCount++;
          this.#freeSlot(h);
        }
        if (wanted > 0) wanted--;
        out.push({ tenant: h.tenant, flow: h.flow, key });
      }
    }
    return out;
  }

  /** When the earliest waiting queue that is not ready yet becomes ready (undefined: none). Epoch ms. */
  nextReadyAt(now: number): number | undefined {
    let at: number | undefined;
    for (const line of this.#waiting.values())
      for (const q of line.values()) if (q.readyAt > now && (at === undefined || q.readyAt < at)) at = q.readyAt;
    return at;
  }

  /** The queues waiting for a slot that have something to deliver now, longest waiting first. */
  waitingNow(now: number): WaitingQueue[] {
    const out: WaitingQueue[] = [];
    for (const line of this.#waiting.values()) for (const q of line.values()) if (q.readyAt <= now) out.push(q);
    return out.sort((a, b) => waitedMs(b, now) - waitedMs(a, now));
  }

  /** The queues holding a slot. */
  holders(): QueueRef[] {
    return [...this.#holders.values()].map(({ tenant, flow }) => ({ tenant, flow }));
  }

  /** Forgets every waiting queue (the process stops). */
  clearWaiting(): void {
    this.#waiting.clear();
    this.#waitingCount = 0;
  }

  #readyCount(now: number): number {
    let n = 0;
    for (const line of this.#waiting.values()) for (const q of line.values()) if (q.readyAt <= now) n++;
    return n;
  }

  /**
   * The queue the next free slot goes to: the first ready queue of the first tenant in turn order
   * (a tenant served goes to the back) under its ceiling. `freeing`: a tenant about to give a slot
   * back (counted one lower).
   */
  #nextStartable(now: number, freeing: string | undefined): WaitingQueue | undefined {
    if (this.#waitingCount === 0) return undefined;
    for (const [tenant, line] of this.#waiting) {
      const holding = (this.#perTenant.get(tenant) ?? 0) - (tenant === freeing ? 1 : 0);
      if (holding >= this.limits.maxPerTenant) continue;
      for (const q of line.values()) if (q.readyAt <= now) return q;
    }
    return undefined;
  }
}

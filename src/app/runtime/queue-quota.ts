/**
 * The per-tenant bounds on queues (issue 33): how many queues a tenant may have
 * (`max_queues_per_tenant`; a queue stays once made, its id counter with it, so this bounds the
 * flow names it can submit to), and how many bytes its queues may take (`max_queue_bytes_per_tenant`). One tenant sending to thousands of made-up flow names, or
 * piling up a backlog nobody drains, stops at its own bounds instead of filling the disk that
 * every tenant's queues share.
 *
 * The request path asks a ledger kept in memory (a Map lookup and two comparisons). The ledger is
 * filled from the store (QueueStore.tenantUsage) on a tenant's first submission, counts what this
 * process adds, and is read again from the store when a bound looks reached (the tenant's workers
 * may have drained since) and, in the background, when a bound is near (other processes and nodes
 * add too). The queue bound holds exactly within a process (a queue never goes away, so every one
 * known here keeps counting); what other processes made since the last look may pass it, and the
 * byte bound may be passed by the messages being written when the store is read.
 */
import { QueueQuotaError } from '../../common/errors.js';
import type { TenantQueueUsage } from '../../queue/index.js';

export interface QueueQuotaLimits {
  /** max_queues_per_tenant */
  readonly maxQueues: number;
  /** max_queue_bytes_per_tenant */
  readonly maxBytes: number;
}

export interface QueueQuotaDeps {
  readonly limits: QueueQuotaLimits;
  /** What the tenant's queues hold, read from the store. */
  usage(tenant: string): Promise<TenantQueueUsage>;
  /** @default Date.now */
  now?(): number;
}

/** What one message adds besides its body: the record's frame, ids, times, trace context. Bytes. */
export const RECORD_OVERHEAD_BYTES = 160;
/** What a queue's first message adds besides itself on files: its directory and files. Bytes. */
export const NEW_QUEUE_BYTES = 16_384;
/** A bound that looks reached is looked at again in the store at most this often. Milliseconds. */
export const RECHECK_MS = 1000;
/** Past this share of a bound, the ledger is refreshed in the background (at most every RECHECK_MS). */
const NEAR = 0.9;

/** Why a submission is refused, or undefined when it may be written. Pure. */
export function quotaRefusal(
  tenant: string,
  held: { readonly flows: ReadonlySet<string>; readonly bytes: number },
  flow: string,
  bytes: number,
  limits: QueueQuotaLimits,
): string | undefined {
  if (!held.flows.has(flow) && held.flows.size >= limits.maxQueues)
    return `queue limit reached: tenant '${tenant}' has ${held.flows.size} queues (max_queues_per_tenant ${limits.maxQueues})`;
  if (held.bytes + bytes > limits.maxBytes)
    return `queue storage limit reached: tenant '${tenant}' queues take ${held.bytes} bytes (max_queue_bytes_per_tenant ${limits.maxBytes})`;
  return undefined;
}

interface Ledger {
  flows: Set<string>;
  bytes: number;
  /** When the store was last read (its start). */
  readAt: number;
  /** Bytes this process added since the read in progress started (kept on top of its result). */
  addedSince: { bytes: number } | undefined;
}

export class QueueQuota {
  readonly #deps: QueueQuotaDeps;
  readonly #now: () => number;
  readonly #ledgers = new Map<string, Ledger>();
  readonly #reads = new Map<string, Promise<void>>();

  constructor(deps: QueueQuotaDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Counts a submission of `bodyBytes` to the tenant's queue `flow`, or refuses it: resolves (or
   * returns, when the ledger is at hand) once it may be written.
   * @throws QueueQuotaError (507) when a bound of the tenant is reached
   */
  admit(tenant: string, flow: string, bodyBytes: number): void | Promise<void> {
    const ledger = this.#ledgers.get(tenant);
    if (ledger === undefined) return this.#read(tenant).then(() => this.#admitOnce(tenant, flow, bodyBytes));
    const refusal = this.#take(tenant, ledger, flow, bodyBytes);
    if (refusal === undefined) return;
    if (this.#now() - ledger.readAt < RECHECK_MS) throw new QueueQuotaError(refusal);
    return this.#read(tenant).then(() => this.#admitOnce(tenant, flow, bodyBytes));
  }

  #admitOnce(tenant: string, flow: string, bodyBytes: number): void {
    const refusal = this.#take(tenant, this.#ledgers.get(tenant)!, flow, bodyBytes);
    if (refusal !== undefined) throw new QueueQuotaError(refusal);
  }

  /**
   * Counts the message when it fits, reserving its place before the write so concurrent ones see
   * it; else answers why it does not.
   */
  #take(tenant: string, ledger: Ledger, flow: string, bodyBytes: number): string | undefined {
    const bytes = bodyBytes + RECORD_OVERHEAD_BYTES + (ledger.flows.has(flow) ? 0 : NEW_QUEUE_BYTES);
    const refusal = quotaRefusal(tenant, ledger, flow, bytes, this.#deps.limits);
    if (refusal !== undefined) return refusal;
    ledger.flows.add(flow);
    ledger.bytes += bytes;
    if (ledger.addedSince !== undefined) ledger.addedSince.bytes += bytes;
    if (this.#near(ledger) && !this.#reads.has(tenant) && this.#now() - ledger.readAt >= RECHECK_MS)
      void this.#read(tenant).catch(() => undefined);
    return undefined;
  }

  #near(ledger: Ledger): boolean {
    const { maxQueues, maxBytes } = this.#deps.limits;
    return ledger.flows.size >= maxQueues * NEAR || ledger.bytes >= maxBytes * NEAR;
  }

  /** Reads the tenant's usage from the store (one read at a time per tenant), keeping what was added meanwhile. */
  #read(tenant: string): Promise<void> {
    const pending = this.#reads.get(tenant);
    if (pending !== undefined) return pending;
    const startedAt = this.#now();
    const before = this.#ledgers.get(tenant);
    if (before !== undefined) before.addedSince = { bytes: 0 };
    const reading = this.#deps
      .usage(tenant)
      .then((usage) => {
        const current = this.#ledgers.get(tenant);
        // A queue never goes away (its id counter stays), so every queue known here still counts,
        // written yet or not: the union keeps the queue bound exact within this process.
        const flows = new Set(usage.flows);
        for (const f of current?.flows ?? []) flows.add(f);
        const addedBytes = current?.addedSince?.bytes ?? 0;
        this.#ledgers.set(tenant, { flows, bytes: usage.bytes + addedBytes, readAt: startedAt, addedSince: undefined });
      })
      .finally(() => {
        this.#reads.delete(tenant);
        const ledger = this.#ledgers.get(tenant);
        if (ledger !== undefined) ledger.addedSince = undefined;
      });
    this.#reads.set(tenant, reading);
    return reading;
  }
}

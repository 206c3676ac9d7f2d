/**
 * Appends to the PostgreSQL queues with group commit: every append that arrives while a batch is
 * being committed waits for the next one, and a batch is one transaction, so under load one
 * COMMIT (one WAL flush with synchronous_commit on) covers many messages. An append resolves only
 * after the COMMIT that holds it returned, so an acknowledged /enqueue is on the server's disk.
 *
 * Ids: each queue's counter row (`queue_heads`) is moved by the batch's count and stays locked
 * until COMMIT, so ids of one queue commit in the order they were drawn, on every node, and are
 * never reissued (a rolled-back batch leaves a gap). Queues are locked in name order, so two
 * nodes' batches never wait on each other in a cycle.
 */
import { SvcError } from '../../common/errors.js';
import type { PgDb, PgTx } from '../../store/pg/pg-db.js';
import {
  GENESIS_HASH,
  prepareAuditEntry,
  type AuditHead,
  type PreparedAuditEntry,
} from '../../store/contracts/audit.js';
import { appendLockedAuditIn, lockHeadsSql } from '../../store/pg/pg-audit-store.js';
import type { AppendInput, RowAppendResult } from '../contract.js';

/** Messages in one transaction at most. */
const MAX_BATCH = 2000;
/** Transactions in flight at once: one commits while the next gathers. */
const MAX_IN_FLIGHT = 2;

/** The notification channel that wakes a queue's worker on whichever node holds it; payload `schema|tenant/flow`. */
export const QUEUE_CHANNEL = 'svc_queue';

interface Pending {
  readonly tenant: string;
  readonly flow: string;
  readonly input: AppendInput;
  readonly resolve: (r: RowAppendResult) => void;
  readonly reject: (err: unknown) => void;
}

export class PgQueueAppender {
  readonly #db: PgDb;
  readonly #onCommitted: (tenant: string, flow: string) => void;
  #pending: Pending[] = [];
  #inFlight = 0;
  #scheduled = false;
  #closed = false;
  readonly #idle: (() => void)[] = [];

  /** @param onCommitted told of each queue a committed batch wrote to (this node's worker of it wakes up) */
  constructor(db: PgDb, onCommitted: (tenant: string, flow: string) => void) {
    this.#db = db;
    this.#onCommitted = onCommitted;
  }

  append(tenant: string, flow: string, input: AppendInput): Promise<RowAppendResult> {
    if (this.#closed) return Promise.reject(new SvcError('SVC_ERR_INTERNAL', 'the queue store is closed'));
    return new Promise((resolve, reject) => {
      this.#pending.push({ tenant, flow, input, resolve, reject });
      this.#schedule();
    });
  }

  /** Stops taking appends and waits for the batches in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#inFlight === 0 && this.#pending.length === 0) return;
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= MAX_IN_FLIGHT) return;
    this.#scheduled = true;
    // One turn of gathering: the appends of this turn's requests go together.
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#pending.length === 0) return;
      const batch = this.#pending.length <= MAX_BATCH ? this.#pending : this.#pending.slice(0, MAX_BATCH);
      this.#pending = batch === this.#pending ? [] : this.#pending.slice(MAX_BATCH);
      this.#inFlight++;
      void this.#commit(batch).finally(() => {
        this.#inFlight--;
        if (this.#pending.length > 0) this.#schedule();
        else if (this.#inFlight === 0) for (const w of this.#idle.splice(0)) w();
      });
      if (this.#pending.length > 0) this.#schedule();
    });
  }

  async #commit(batch: Pending[]): Promise<void> {
    const byQueue = new Map<string, Pending[]>();
    for (const p of batch) {
      const key = `${p.tenant}/${p.flow}`;
      let list = byQueue.get(key);
      if (list === undefined) byQueue.set(key, (list = []));
      list.push(p);
    }
    const queues = [...byQueue.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    let firstIds: number[];
    try {
      firstIds = await this.#db.transaction(async (tx) => {
        const firsts: number[] = [];
        // The audit heads of every receipt's tenant are locked by the last queue's statement (after
        // every queue row, as appendAuditIn would take them): no round trip of their own.
        const auditTenants = [...new Set(batch.filter((p) => p.input.receipt !== undefined).map((p) => p.tenant))];
        let auditHeads = new Map<string, AuditHead>();
        for (const [q, [, items]] of queues.entries()) {
          const last = q === queues.length - 1;
          const inserted = await insertQueueBatch(
            tx,
            this.#db.schema,
            items[0]!.tenant,
            items[0]!.flow,
            items,
            last ? auditTenants : [],
          );
          firsts.push(inserted.first);
          if (last) auditHeads = inserted.auditHeads;
        }
        // Each message's audit entry in the same transaction: acknowledged means entered, whatever crashes.
        const receipts: PreparedAuditEntry[] = [];
        queues.forEach(([, items], q) =>
          items.forEach((p, i) => {
            if (p.input.receipt !== undefined) receipts.push(prepareAuditEntry(p.input.receipt(firsts[q]! + i)));
          }),
        );
        await appendLockedAuditIn(tx, receipts, auditHeads);
        return firsts;
      });
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    queues.forEach(([, items], q) => {
      items.forEach((p, i) => {
        const id = firstIds[q]! + i;
        p.resolve({ storage: 'row', id });
      });
      this.#onCommitted(items[0]!.tenant, items[0]!.flow);
    });
  }
}

/** What insertQueueBatch answers: the first id drawn, and the audit heads it locked (none asked: empty). */
export interface QueueBatchInserted {
  readonly first: number;
  readonly auditHeads: Map<string, AuditHead>;
}

/**
 * Draws `items.length` ids of one queue, inserts the messages and notifies the queue's channel,
 * inside the caller's transaction, in one statement: the queue's head row is locked from this
 * statement to COMMIT, so every round trip saved here is time the next batch of the queue waits
 * less. With `auditTenants`, the same statement then locks those tenants' audit heads (after the
 * queue's row: the lock order of every append) for appendLockedAuditIn; the caller passes them
 * only to the last queue of its batch, so the heads are still taken after every queue row.
 */
export async function insertQueueBatch(
  tx: PgTx,
  schema: string,
  tenant: string,
  flow: string,
  items: readonly { readonly input: AppendInput }[],
  auditTenants: readonly string[] = [],
): Promise<QueueBatchInserted> {
  const now = new Date().toISOString();
  // The notify's CTE is read by the final SELECT: an unread SELECT in WITH is never run. The heads'
  // INSERT reads `head`, so it runs once the queue's row is locked.
  const r = await tx.query<{ first: number; tenant: string | null; seq: number | null; hash: string | null }>(
    `WITH head AS (
       INSERT INTO queue_heads (tenant, flow, next_id) VALUES ($1, $2, $3::bigint + 1)
       ON CONFLICT (tenant, flow) DO UPDATE SET next_id = queue_heads.next_id + $3::bigint
       RETURNING next_id - $3::bigint AS first
     ), messages AS (
       INSERT INTO queue_messages (tenant, flow, id, correlation_id, enqueued_at, payload, traceparent, tracestate)
       SELECT $1, $2, head.first + ord - 1, c, e, p, tp, ts
         FROM head, unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS m(c, e, p, tp, ts, ord)
     ), notified AS (
       SELECT pg_notify($9, $10)
     ), audit_heads_locked AS (
       ${lockHeadsSql('$11', '$12', 'head')}
     )
     SELECT head.first, a.tenant, a.seq, a.hash FROM head CROSS JOIN notified LEFT JOIN audit_heads_locked a ON true`,
    [
      tenant,
      flow,
      items.length,
      items.map((i) => i.input.correlationId),
      items.map((i) => i.input.enqueuedAt ?? now),
      items.map((i) => JSON.stringify(i.input.payload ?? null)),
      items.map((i) => i.input.traceparent ?? null),
      items.map((i) => i.input.tracestate ?? null),
      QUEUE_CHANNEL,
      `${schema}|${tenant}/${flow}`,
      auditTenants,
      GENESIS_HASH,
    ],
  );
  const auditHeads = new Map<string, AuditHead>();
  for (const row of r.rows)
    if (row.tenant !== null) auditHeads.set(row.tenant, { seq: Number(row.seq), hash: row.hash! });
  return { first: Number(r.rows[0]!.first), auditHeads };
}

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
import { prepareAuditEntry, type PreparedAuditEntry } from '../../store/contracts/audit.js';
import { appendAuditIn } from '../../store/pg/pg-audit-store.js';
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
        for (const [, items] of queues)
          firsts.push(await insertQueueBatch(tx, this.#db.schema, items[0]!.tenant, items[0]!.flow, items));
        // Each message's audit entry in the same transaction: acknowledged means entered, whatever crashes.
        const receipts: PreparedAuditEntry[] = [];
        queues.forEach(([, items], q) =>
          items.forEach((p, i) => {
            if (p.input.receipt !== undefined) receipts.push(prepareAuditEntry(p.input.receipt(firsts[q]! + i)));
          }),
        );
        await appendAuditIn(tx, receipts);
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

/**
 * Draws `items.length` ids of one queue and inserts the messages, inside the caller's transaction.
 * @returns the first id drawn
 */
export async function insertQueueBatch(
  tx: PgTx,
  schema: string,
  tenant: string,
  flow: string,
  items: readonly { readonly input: AppendInput }[],
): Promise<number> {
  const n = items.length;
  const head = await tx.query<{ next_id: number }>(
    'INSERT INTO queue_heads (tenant, flow, next_id) VALUES ($1, $2, $3 + 1) ON CONFLICT (tenant, flow) DO UPDATE SET next_id = queue_heads.next_id + $3 RETURNING next_id',
    [tenant, flow, n],
  );
  const first = head.rows[0]!.next_id - n;
  const now = new Date().toISOString();
  await tx.query(
    `INSERT INTO queue_messages (tenant, flow, id, correlation_id, enqueued_at, payload, traceparent, tracestate)
     SELECT $1, $2, $3::bigint + ord - 1, c, e, p, tp, ts
       FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS m(c, e, p, tp, ts, ord)`,
    [
      tenant,
      flow,
      first,
      items.map((i) => i.input.correlationId),
      items.map((i) => i.input.enqueuedAt ?? now),
      items.map((i) => JSON.stringify(i.input.payload ?? null)),
      items.map((i) => i.input.traceparent ?? null),
      items.map((i) => i.input.tracestate ?? null),
    ],
  );
  await tx.query('SELECT pg_notify($1, $2)', [QUEUE_CHANNEL, `${schema}|${tenant}/${flow}`]);
  return first;
}

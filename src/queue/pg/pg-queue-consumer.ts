/**
 * This node's worker of one queue on PostgreSQL. It holds the queue's lock on the node lease
 * (node-lease.ts) while it runs, so one worker per queue runs across the cluster; every delivery
 * is fenced by `assertHeld`, so a node that was paused past its lease delivers nothing more.
 *
 * Delivery order: scheduled retries that are due first (soonest first), then fresh messages in id
 * order. Fresh messages are read after a cursor, which is safe because the ids of one queue commit
 * in order (pg-appender.ts). Acknowledged messages are deleted in batches (every `checkpointEvery`
 * acks, and whenever the worker is idle), so a crash redelivers at most that many (at least once).
 * A retry is written before the worker moves on; a dead letter is written with the message's
 * removal in one transaction. An outcome whose row could not be written (a full disk, a lost
 * server) is held and written before anything else is delivered: the fresh cursor has already
 * passed the message, so dropping the outcome would leave the message unread until the worker
 * restarts, and delivering it again would run its handler twice.
 */
import { settlementOf, type Settlement } from '../settlement.js';
import {
  DEFAULT_RETRY_POLICY,
  type ConsumerStateName,
  type QueueConsumerHandle,
  type QueueConsumerOptions,
  type QueueMessage,
  type QueueStats,
  type QueueBacklog,
} from '../contract.js';
import { InFlightHandler } from '../in-flight-handler.js';
import type { PgDb } from '../../store/pg/pg-db.js';
import { LeaseLostError, type NodeLease } from '../coordination/node-lease.js';

/** Fresh messages read ahead at most. */
const READ_AHEAD = 256;
/** Due retries read per look. */
const RETRIES_PER_READ = 64;
/** Longest an acknowledgement waits in memory while the worker is busy. Milliseconds. */
const ACK_FLUSH_MS = 100;

interface MessageRow {
  id: number;
  correlation_id: string;
  enqueued_at: string;
  attempts: number;
  payload: string;
  traceparent: string | null;
  tracestate: string | null;
  due_ms: number | null;
}

export interface PgQueueRef {
  readonly db: PgDb;
  readonly lease: NodeLease;
  readonly tenant: string;
  readonly flow: string;
}

/** The lease lock name of a queue. */
export const queueLockName = (tenant: string, flow: string) => `queue:${tenant}/${flow}`;

export class PgQueueConsumer implements QueueConsumerHandle {
  readonly #q: PgQueueRef;
  readonly #lock: string;
  readonly #opts: QueueConsumerOptions & {
    pollIntervalMs: number;
    checkpointEvery: number;
    closeGraceMs: number;
    deliveriesPerTurn: number;
  };
  #state: ConsumerStateName = 'running';
  #cursor = 0;
  #fresh: MessageRow[] = [];
  #acks: number[] = [];
  #ackedAt = 0;
  #nextRetryDueMs: number | undefined;
  /** The outcome of the last delivery while its row (retry, dead letter) is not written. */
  #unsettled: { readonly msg: QueueMessage; readonly settlement: Settlement } | undefined;
  #wake: (() => void) | undefined;
  #notified = false;
  readonly #inFlight: InFlightHandler;
  #loop: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  /** finish() was called: the loop ends after the delivery in flight. */
  #finishing = false;

  private constructor(q: PgQueueRef, opts: QueueConsumerOptions) {
    this.#q = q;
    this.#lock = queueLockName(q.tenant, q.flow);
    this.#opts = { pollIntervalMs: 500, checkpointEvery: 64, closeGraceMs: 5000, deliveriesPerTurn: 16, ...opts };
    this.#inFlight = new InFlightHandler(opts.handler, opts.defaultPolicy ?? DEFAULT_RETRY_POLICY);
  }

  /** Takes the queue's lock and starts the loop; undefined when a worker runs on any node. */
  static async start(q: PgQueueRef, opts: QueueConsumerOptions): Promise<PgQueueConsumer | undefined> {
    if (!(await q.lease.tryLock(queueLockName(q.tenant, q.flow)))) return undefined;
    const c = new PgQueueConsumer(q, opts);
    c.#loop = c.#run();
    return c;
  }

  get state(): ConsumerStateName {
    return this.#state;
  }

  /** Something was appended to the queue (by this node, or another: a notification). */
  notify(): void {
    this.#notified = true;
    this.#wake?.();
  }

  async stats(): Promise<QueueStats> {
    await this.#flushAcks().catch(() => undefined);
    return queueStats(this.#q.db, this.#q.tenant, this.#q.flow);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#state === 'closed') return;
      this.#state = 'closing';
      this.#wake?.();
      try {
        await this.#inFlight.closeWithin(this.#loop, this.#opts.closeGraceMs);
      } finally {
        // Not written by then: the message's row is as it was, and whichever worker takes the queue next delivers it again.
        await this.#writeSettlement().catch((err: unknown) => this.#opts.onError?.(err));
        await this.#flushAcks().catch((err: unknown) => this.#opts.onError?.(err));
        await this.#q.lease.unlock(this.#lock);
        this.#state = 'closed';
      }
    })();
    return this.#closing;
  }

  async finish(): Promise<QueueBacklog | undefined> {
    this.#finishing = true;
    this.#wake?.();
    // The loop ends at its next turn; close() then finds no handler in flight (unless it is called
    // meanwhile, with its own grace).
    await this.#loop?.catch(() => undefined);
    await this.close();
    return backlogOf(this.#q.db, this.#q.tenant, this.#q.flow);
  }

  async #run(): Promise<void> {
    let inTurn = 0;
    while (this.#state === 'running' && !this.#finishing) {
      try {
        await this.#q.lease.assertHeld(this.#lock);
        // Only after a write failed: the usual turn of the loop costs no extra await.
        if (this.#unsettled !== undefined) await this.#writeSettlement();
        if (inTurn >= this.#opts.deliveriesPerTurn) {
          inTurn = 0;
          await new Promise((r) => setImmediate(r));
        }
        const now = Date.now();
        if (this.#acks.length > 0 && now - this.#ackedAt >= ACK_FLUSH_MS) await this.#flushAcks();
        if (this.#fresh.length === 0 || (this.#nextRetryDueMs !== undefined && this.#nextRetryDueMs <= now)) {
          const retries = await this.#dueRetries(now);
          if (retries.length > 0) {
            for (const r of retries) {
              if (this.#state !== 'running' || this.#finishing) break;
              await this.#deliver(r);
              inTurn++;
            }
            continue;
          }
        }
        if (this.#fresh.length === 0) await this.#readFresh();
        const next = this.#fresh.shift();
        if (next !== undefined) {
          await this.#deliver(next);
          inTurn++;
          continue;
        }
        inTurn = 0;
        await this.#flushAcks();
        this.#opts.onIdle?.(this.#nextRetryDueMs);
        if (this.#finishing) break;
        await this.#sleep(now);
      } catch (err) {
        if (err instanceof LeaseLostError) {
          this.#stopAfterLeaseLoss();
          return;
        }
        this.#opts.onError?.(err);
        await new Promise((r) => setTimeout(r, this.#opts.pollIntervalMs).unref());
      }
    }
  }

  #stopAfterLeaseLoss(): void {
    this.#state = 'closing';
    this.#opts.onLockLost?.();
  }

  async #sleep(now: number): Promise<void> {
    if (this.#notified || this.#finishing) {
      this.#notified = false;
      return;
    }
    const untilRetry = this.#nextRetryDueMs === undefined ? Infinity : Math.max(0, this.#nextRetryDueMs - now);
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, Math.min(this.#opts.pollIntervalMs, untilRetry));
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.#wake = done;
    });
    this.#wake = undefined;
    this.#notified = false;
  }

  async #readFresh(): Promise<void> {
    const r = await this.#q.db.query<MessageRow>(
      `SELECT id, correlation_id, enqueued_at, attempts, payload, traceparent, tracestate, due_ms FROM queue_messages
        WHERE tenant = $1 AND flow = $2 AND due_ms IS NULL AND id > $3 ORDER BY id LIMIT $4`,
      [this.#q.tenant, this.#q.flow, this.#cursor, READ_AHEAD],
    );
    this.#fresh = r.rows;
    if (r.rows.length > 0) this.#cursor = r.rows[r.rows.length - 1]!.id;
  }

  async #dueRetries(now: number): Promise<MessageRow[]> {
    // An acknowledged retry keeps its due row until the acks are written: write them first, or it
    // would be read as due again.
    await this.#flushAcks();
    const r = await this.#q.db.query<MessageRow & { next_due: number | null }>(
      `SELECT id, correlation_id, enqueued_at, attempts, payload, traceparent, tracestate, due_ms,
              (SELECT min(due_ms) FROM queue_messages WHERE tenant = $1 AND flow = $2 AND due_ms > $3) AS next_due
         FROM queue_messages WHERE tenant = $1 AND flow = $2 AND due_ms <= $3 ORDER BY due_ms, id LIMIT $4`,
      [this.#q.tenant, this.#q.flow, now, RETRIES_PER_READ],
    );
    if (r.rows.length === 0) {
      const next = await this.#q.db.query<{ next_due: number | null }>(
        'SELECT min(due_ms) AS next_due FROM queue_messages WHERE tenant = $1 AND flow = $2 AND due_ms IS NOT NULL',
        [this.#q.tenant, this.#q.flow],
      );
      this.#nextRetryDueMs = next.rows[0]?.next_due ?? undefined;
      return [];
    }
    // More may be due than one read took: look again at once after these.
    this.#nextRetryDueMs = r.rows.length === RETRIES_PER_READ ? now : (r.rows[0]!.next_due ?? undefined);
    return r.rows;
  }

  async #deliver(row: MessageRow): Promise<void> {
    const msg: QueueMessage = {
      id: row.id,
      correlationId: row.correlation_id,
      enqueuedAt: row.enqueued_at,
      attempt: row.attempts + 1,
      payload: JSON.parse(row.payload) as unknown,
      isRetry: row.due_ms !== null,
      traceparent: row.traceparent ?? undefined,
      tracestate: row.tracestate ?? undefined,
    };
    // Fenced here too: the read may have waited on a pause past the lease.
    await this.#q.lease.assertHeld(this.#lock);
    // Named to leave meanwhile (finish): its slot may already be another worker's (an idle worker's
    // is freed at once), so it starts nothing more; the row stays for the next worker. Checked
    // after the last await, so no naming can come between the check and the handler. Without it a
    // worker waking from its idle sleep delivered beside its successor: 9 and 10 calls in flight
    // from two pools of 4 (test/queue-pool.test.ts, about 1 run in 6, on either runtime).
    if (this.#finishing) return;
    const outcome = await this.#inFlight.run(msg);
    if (outcome === 'abandoned') return;
    this.#unsettled = { msg, settlement: settlementOf(msg, outcome, Date.now()) };
    await this.#writeSettlement();
  }

  /** Writes the held outcome, if any; it stays held when that fails (the caller tries again later). */
  async #writeSettlement(): Promise<void> {
    const held = this.#unsettled;
    if (held === undefined) return;
    const { msg, settlement: s } = held;
    const { db, tenant, flow } = this.#q;
    if (s.kind === 'ack') {
      // Acks are kept in memory until written (flushAcks keeps them when that fails): not held here.
      this.#unsettled = undefined;
      if (this.#acks.length === 0) this.#ackedAt = Date.now();
      this.#acks.push(msg.id);
      if (this.#acks.length >= this.#opts.checkpointEvery) await this.#flushAcks();
      return;
    }
    if (s.kind === 'retry') {
      // Written late, its due time may have passed: it is then due at once, its delay already waited.
      await db.query(
        'UPDATE queue_messages SET attempts = $4, due_ms = $5 WHERE tenant = $1 AND flow = $2 AND id = $3',
        [tenant, flow, msg.id, s.attempts, s.dueMs],
      );
      this.#unsettled = undefined;
      if (this.#nextRetryDueMs === undefined || s.dueMs < this.#nextRetryDueMs) this.#nextRetryDueMs = s.dueMs;
      this.#opts.onAttemptFailed?.({
        message: msg,
        error: s.error,
        retryInMs: s.delayMs,
        deadLettered: false,
        fixed: s.fixed,
        step: s.step,
      });
      return;
    }
    await db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO queue_dead_letters (tenant, flow, id, payload, enqueued_at, failed_at, attempts, last_error)
         SELECT tenant, flow, id, payload, enqueued_at, $4, $5, $6 FROM queue_messages WHERE tenant = $1 AND flow = $2 AND id = $3
         ON CONFLICT (tenant, flow, id) DO NOTHING`,
        [tenant, flow, msg.id, new Date().toISOString(), s.attempts, s.error],
      );
      await tx.query('DELETE FROM queue_messages WHERE tenant = $1 AND flow = $2 AND id = $3', [tenant, flow, msg.id]);
    });
    this.#unsettled = undefined;
    this.#opts.onAttemptFailed?.({
      message: msg,
      error: s.error,
      retryInMs: undefined,
      deadLettered: true,
      fixed: false,
      step: s.step,
    });
    this.#opts.onDeadLettered?.({ message: msg, error: s.error, attempts: s.attempts, step: s.step });
    // Its audit entry committed before the next delivery (a crash within this wait leaves the dead letter without it).
    await this.#opts.recordsDurable?.().catch(() => undefined);
  }

  async #flushAcks(): Promise<void> {
    if (this.#acks.length === 0) return;
    const ids = this.#acks;
    this.#acks = [];
    try {
      // Their records (audit entries) durable first: a crash never leaves a delivery deleted without its entry.
      await this.#opts.recordsDurable?.().catch(() => undefined);
      // Counted as processed in the same statement: a delete that finds a row already gone (acked
      // before a crash and delivered again) does not count it twice.
      await this.#q.db.query(
        `WITH acked AS (DELETE FROM queue_messages WHERE tenant = $1 AND flow = $2 AND id = ANY($3::bigint[]) RETURNING id)
         INSERT INTO queue_processed (tenant, flow, processed) SELECT $1, $2, count(*) FROM acked HAVING count(*) > 0
         ON CONFLICT (tenant, flow) DO UPDATE SET processed = queue_processed.processed + excluded.processed`,
        [this.#q.tenant, this.#q.flow, ids],
      );
    } catch (err) {
      this.#acks = ids.concat(this.#acks);
      throw err;
    }
  }
}

/** A queue's QueueBacklog.readyAt over its rows: 0 when a fresh message waits, else its earliest retry's due time. */
export const READY_AT = '(CASE WHEN bool_or(due_ms IS NULL) THEN 0 ELSE min(due_ms) END)::bigint AS "readyAt"';

/** What one queue holds to deliver (QueueStore.backlogOf): one query. */
export async function backlogOf(db: PgDb, tenant: string, flow: string): Promise<QueueBacklog | undefined> {
  return (
    await db.query<QueueBacklog>(
      `SELECT tenant, flow, ${READY_AT} FROM queue_messages WHERE tenant = $1 AND flow = $2 GROUP BY tenant, flow`,
      [tenant, flow],
    )
  ).rows[0];
}

/** Counters of one queue: ids issued, deliveries finished, messages waiting, retries scheduled, dead letters pending. */
export async function queueStats(db: PgDb, tenant: string, flow: string): Promise<QueueStats> {
  const r = await db.query<{ issued: number; processed: number; pending: number; dead: number }>(
    `SELECT coalesce((SELECT next_id - 1 FROM queue_heads WHERE tenant = $1 AND flow = $2), 0)::bigint AS issued,
            coalesce((SELECT processed FROM queue_processed WHERE tenant = $1 AND flow = $2), 0)::bigint AS processed,
            (SELECT count(*) FROM queue_messages WHERE tenant = $1 AND flow = $2 AND due_ms IS NULL)::bigint AS pending,
            (SELECT count(*) FROM queue_dead_letters WHERE tenant = $1 AND flow = $2)::bigint AS dead`,
    [tenant, flow],
  );
  const retries = (
    await db.query<{ id: number; attempts: number; due_ms: number }>(
      'SELECT id, attempts, due_ms FROM queue_messages WHERE tenant = $1 AND flow = $2 AND due_ms IS NOT NULL ORDER BY due_ms, id',
      [tenant, flow],
    )
  ).rows;
  const { issued, processed, pending, dead } = r.rows[0]!;
  return {
    tenant,
    flow,
    total: issued,
    processed,
    pending,
    retriesScheduled: retries.length,
    retries: retries.map((x) => ({ id: x.id, attempts: x.attempts, dueMs: x.due_ms })),
    deadLettersPending: dead,
  };
}

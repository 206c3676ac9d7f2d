/**
 * The queues of a cluster on PostgreSQL (the QueueStore contract, contract.ts): appends by group
 * commit (pg-appender.ts), one worker per queue across every node (node-lease.ts), retries and
 * dead letters in rows beside the messages. Nothing of a queue is on a node's disk.
 */
import { randomUUID } from 'node:crypto';
import { SvcError } from '../../common/errors.js';
import type { PgDb } from '../../store/pg/pg-db.js';
import {
  checkQueueNames,
  deadLetterNotFound,
  workerName,
  type AppendInput,
  type CompactionPass,
  type DeadLetter,
  type DeadLetterRow,
  type QueueConsumerHandle,
  type QueueConsumerOptions,
  type QueueName,
  type QueueBacklog,
  type QueueStats,
  type QueueStore,
  type QueuedReceipt,
  type ReplayResult,
  type RowAppendResult,
  type TenantQueueUsage,
  checkTenantName,
} from '../contract.js';
import { leaseCoordination, type Coordination } from '../coordination/coordination.js';
import { NodeLease, type NodeLeaseOptions } from '../coordination/node-lease.js';
import { ConsumerRegistry } from '../consumer-registry.js';
import { insertQueueBatch, PgQueueAppender, QUEUE_CHANNEL } from './pg-appender.js';
import { backlogOf, PgQueueConsumer, queueLockName, queueStats, READY_AT } from './pg-queue-consumer.js';

export interface PgQueueStoreOptions {
  /** The lease of this node's queue locks (see NodeLease). */
  readonly lease?: Pick<NodeLeaseOptions, 'leaseMs' | 'heartbeatMs'>;
  /** Told when the lease session was lost (every worker of this node stops; see onLockLost). */
  readonly onLeaseLost?: (err: Error) => void;
}

interface DeadLetterDbRow {
  tenant: string;
  flow: string;
  id: number;
  payload: string;
  enqueued_at: string;
  failed_at: string;
  attempts: number;
  last_error: string;
}

export class PgQueueStore implements QueueStore {
  readonly #db: PgDb;
  /** This node's lease: its cluster-wide locks (every queue it runs, the scheduler, the housekeeping). */
  readonly lease: NodeLease;
  readonly coordination: Coordination;
  /** A node that dies leaves its queues to the live nodes once its lease ends: a server adopts them (see QueueStore). */
  readonly adoptsOrphans = true;
  readonly receipts = 'with-message';
  readonly #appender: PgQueueAppender;
  readonly #consumers = new ConsumerRegistry<PgQueueConsumer>();
  #closed = false;

  constructor(db: PgDb, opts: PgQueueStoreOptions = {}) {
    this.#db = db;
    this.#appender = new PgQueueAppender(db, (tenant, flow) => this.#consumers.get(`${tenant}/${flow}`)?.notify());
    this.lease = new NodeLease(db, {
      ...opts.lease,
      onLost: (err) => opts.onLeaseLost?.(err),
      listen: {
        [QUEUE_CHANNEL]: (payload) => {
          const bar = payload.indexOf('|');
          if (payload.slice(0, bar) === db.schema) this.#consumers.get(payload.slice(bar + 1))?.notify();
        },
      },
    });
    this.coordination = leaseCoordination(this.lease);
  }

  checkNames(tenant: string, flow: string): void {
    checkQueueNames(tenant, flow);
  }

  append(tenant: string, flow: string, input: AppendInput): Promise<RowAppendResult> {
    if (this.#closed) return Promise.reject(new SvcError('SVC_ERR_INTERNAL', 'the queue store is closed'));
    try {
      checkQueueNames(tenant, flow);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#appender.append(tenant, flow, input);
  }

  async startConsumer(
    tenant: string,
    flow: string,
    opts: QueueConsumerOptions,
  ): Promise<QueueConsumerHandle | undefined> {
    checkQueueNames(tenant, flow);
    const key = `${tenant}/${flow}`;
    if (this.#closed || this.#consumers.get(key) !== undefined) return undefined;
    return this.#consumers.start(key, opts, (o) =>
      PgQueueConsumer.start({ db: this.#db, lease: this.lease, tenant, flow }, o),
    );
  }

  /** This node's running worker of the queue, if any (one closed through its handle is forgotten). */
  consumer(tenant: string, flow: string): QueueConsumerHandle | undefined {
    return this.#consumers.get(`${tenant}/${flow}`);
  }

  async stopConsumer(tenant: string, flow: string): Promise<void> {
    await this.#consumers.stop(`${tenant}/${flow}`);
  }

  /** Always false: the pool asks a node's lease again at most once a second (QueuePool's recheck) instead. */
  servedElsewhereNow(): boolean {
    return false;
  }

  async consumedElsewhere(tenant: string, flow: string): Promise<boolean> {
    checkQueueNames(tenant, flow);
    return this.lease.heldElsewhere(queueLockName(tenant, flow));
  }

  async workerOf(tenant: string, flow: string): Promise<string | undefined> {
    checkQueueNames(tenant, flow);
    const holder = await this.lease.holderOf(queueLockName(tenant, flow));
    return holder === undefined ? undefined : workerName(holder.pid, holder.host);
  }

  async listQueues(): Promise<QueueName[]> {
    return (
      await this.#db.query<QueueName>(
        'SELECT tenant, flow FROM queue_heads ORDER BY tenant COLLATE "C", flow COLLATE "C"',
      )
    ).rows;
  }

  /** Every queue with a row in queue_messages (a message waiting, or in the retry schedule). */
  async queuesWithMessages(): Promise<QueueBacklog[]> {
    return (
      await this.#db.query<QueueBacklog>(`SELECT tenant, flow, ${READY_AT} FROM queue_messages GROUP BY tenant, flow`)
    ).rows;
  }

  async backlogOf(tenant: string, flow: string): Promise<QueueBacklog | undefined> {
    checkQueueNames(tenant, flow);
    return backlogOf(this.#db, tenant, flow);
  }

  async stats(tenant: string, flow: string): Promise<QueueStats> {
    checkQueueNames(tenant, flow);
    const c = this.#consumers.get(`${tenant}/${flow}`);
    return c !== undefined ? c.stats() : queueStats(this.#db, tenant, flow);
  }

  async heldIds(tenant: string, flow: string): Promise<number[]> {
    checkQueueNames(tenant, flow);
    const r = await this.#db.query<{ id: string }>(
      `SELECT id FROM queue_messages WHERE tenant = $1 AND flow = $2
       UNION SELECT id FROM queue_dead_letters WHERE tenant = $1 AND flow = $2 ORDER BY id`,
      [tenant, flow],
    );
    return r.rows.map((row) => Number(row.id));
  }

  /** None: a message's receipt commits with it (`receipts`). */
  async heldReceipts(tenant: string, flow: string): Promise<QueuedReceipt[]> {
    checkQueueNames(tenant, flow);
    return [];
  }

  /** Queues: the tenant's rows in queue_heads (kept for good: ids are never reissued); bytes: its message and dead-letter rows. */
  async tenantUsage(tenant: string): Promise<TenantQueueUsage> {
    checkTenantName(tenant);
    const [heads, rows] = await Promise.all([
      this.#db.query<{ flow: string }>('SELECT flow FROM queue_heads WHERE tenant = $1 ORDER BY flow COLLATE "C"', [
        tenant,
      ]),
      this.#db.query<{ bytes: string }>(
        `SELECT (SELECT coalesce(sum(pg_column_size(m.*)), 0) FROM queue_messages m WHERE tenant = $1)
              + (SELECT coalesce(sum(pg_column_size(d.*)), 0) FROM queue_dead_letters d WHERE tenant = $1) AS bytes`,
        [tenant],
      ),
    ]);
    return { flows: heads.rows.map((r) => r.flow), bytes: Number(rows.rows[0]?.bytes ?? 0) };
  }

  /**
   * Nothing for a pass to do: a message's row is deleted as it settles, a dead letter's as it is
   * replayed or discarded, and the database's (auto)vacuum gives the space back (CompactionPass).
   */
  async compact(): Promise<CompactionPass> {
    return { reclaimedBy: 'database', queues: [] };
  }

  async listDeadLetters(filter: { tenant?: string; flow?: string } = {}): Promise<DeadLetterRow[]> {
    const rows = (
      await this.#db.query<DeadLetterDbRow>(
        `SELECT tenant, flow, id, payload, enqueued_at, failed_at, attempts, last_error FROM queue_dead_letters
          WHERE ($1::text IS NULL OR tenant = $1) AND ($2::text IS NULL OR flow = $2) ORDER BY tenant COLLATE "C", flow COLLATE "C", seq`,
        [filter.tenant ?? null, filter.flow ?? null],
      )
    ).rows;
    return rows.map((r) => ({ tenant: r.tenant, flow: r.flow, ...deadLetterOf(r) }));
  }

  async replayDeadLetter(
    tenant: string,
    flow: string,
    id: number,
    correlationId: string = randomUUID(),
  ): Promise<ReplayResult> {
    checkQueueNames(tenant, flow);
    // The new message and the entry's removal commit together: replayed exactly once.
    const { entry, newId } = await this.#db.transaction(async (tx) => {
      const r = await tx.query<DeadLetterDbRow>(
        'DELETE FROM queue_dead_letters WHERE tenant = $1 AND flow = $2 AND id = $3 RETURNING *',
        [tenant, flow, id],
      );
      if (r.rows[0] === undefined) throw deadLetterNotFound(tenant, flow, id);
      const entry = deadLetterOf(r.rows[0]);
      const { first: newId } = await insertQueueBatch(tx, this.#db.schema, tenant, flow, [
        { input: { correlationId, payload: entry.payload } },
      ]);
      return { entry, newId };
    });
    this.#consumers.get(`${tenant}/${flow}`)?.notify();
    return { entry, message: { storage: 'row', id: newId, correlationId } };
  }

  async discardDeadLetter(tenant: string, flow: string, id: number): Promise<DeadLetter> {
    checkQueueNames(tenant, flow);
    const r = await this.#db.query<DeadLetterDbRow>(
      'DELETE FROM queue_dead_letters WHERE tenant = $1 AND flow = $2 AND id = $3 RETURNING *',
      [tenant, flow, id],
    );
    if (r.rows[0] === undefined) throw deadLetterNotFound(tenant, flow, id);
    return deadLetterOf(r.rows[0]);
  }

  /** Stops every worker (each gets its grace period), waits for the appends in flight, gives the lease back; runs every step. */
  async close(): Promise<void> {
    this.#closed = true;
    const results = [...(await this.#consumers.closeAll()), ...(await Promise.allSettled([this.#appender.close()]))];
    results.push(...(await Promise.allSettled([this.lease.close()])));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

function deadLetterOf(r: DeadLetterDbRow): DeadLetter {
  return {
    id: r.id,
    payload: JSON.parse(r.payload) as unknown,
    enqueued_at: r.enqueued_at,
    failed_at: r.failed_at,
    attempts: r.attempts,
    last_error: r.last_error,
  };
}

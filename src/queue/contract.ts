/**
 * The queue contract every backend implements: the files of the state directory (file/FileQueueStore)
 * and PostgreSQL (pg/PgQueueStore). The queue workers, /enqueue, queue_publish, `svc dlq`, the UI
 * and `svc serve` are written against it; the conformance suite (test/conformance/queue/) runs both.
 * It imports no backend, and no backend imports the other (eslint.config.js).
 */
import type { Coordination } from './coordination/coordination.js';
import type { CompactionPass } from './contract/compaction.js';
import type { QueueConsumerHandle, QueueConsumerOptions } from './contract/consumer.js';
import type { DeadLetter, DeadLetterRow, ReplayResult } from './contract/dead-letters.js';
import type { AppendInput, AppendResult, QueuedReceipt } from './contract/messages.js';
import type { QueueBacklog, QueueName } from './contract/names.js';
import type { QueueStats } from './contract/stats.js';
import type { TenantQueueUsage } from './contract/usage.js';

export * from './contract/messages.js';
export * from './contract/stats.js';
export * from './contract/consumer.js';
export * from './contract/dead-letters.js';
export * from './contract/compaction.js';
export * from './contract/names.js';
export * from './contract/usage.js';
export type { Coordination } from './coordination/coordination.js';
export type { LeaderLock } from './coordination/leader-lock.js';

export interface QueueStore {
  /** @throws SvcError `SVC_ERR_INVALID_NAME` for a tenant or flow breaking the name rule */
  checkNames(tenant: string, flow: string): void;
  /** Resolves once the message is durable (fdatasync, or the COMMIT that holds it), with its id and place (AppendResult). */
  append(tenant: string, flow: string, input: AppendInput): Promise<AppendResult>;
  /** Starts this process's worker; undefined when a worker already runs here or elsewhere (another process or node). */
  startConsumer(tenant: string, flow: string, opts: QueueConsumerOptions): Promise<QueueConsumerHandle | undefined>;
  consumer(tenant: string, flow: string): QueueConsumerHandle | undefined;
  stopConsumer(tenant: string, flow: string): Promise<void>;
  /** True when another live process (or node) runs the queue's worker now. */
  consumedElsewhere(tenant: string, flow: string): Promise<boolean>;
  /**
   * True when this process's last startConsumer found another live process running the queue's
   * worker and that process still holds it, answered on this thread without waiting (a stat): a
   * submission to a queue served elsewhere asks this first. False when unknown: ask startConsumer.
   */
  servedElsewhereNow(tenant: string, flow: string): boolean;
  /** Who runs the queue's worker now (`pid N on host`, `(this server)` when it is this process); undefined: nobody. */
  workerOf(tenant: string, flow: string): Promise<string | undefined>;
  /** Every queue that holds or has held a message. */
  listQueues(): Promise<QueueName[]>;
  /**
   * The queues that hold messages now: waiting for a first delivery, or in the retry schedule (due
   * or not), each with when it has something to deliver. Dead letters do not count (no worker runs
   * them). What a worker should run for, found cheaply: on files by reading each queue's checkpoint
   * and the size of its segment (not every record), on PostgreSQL by one query.
   */
  queuesWithMessages(): Promise<QueueBacklog[]>;
  /** queuesWithMessages for one queue: undefined when it holds nothing to deliver, now or later. */
  backlogOf(tenant: string, flow: string): Promise<QueueBacklog | undefined>;
  /**
   * Whether a server should look every few seconds for queues with messages and no worker anywhere
   * and run them (QueueWorkers.adoptOrphans): true on PostgreSQL, where a node that dies leaves its
   * queues to the live nodes once its lease ends; false on files, where the processes of a state
   * directory are one server and its one-off commands, and a queue whose worker's process died is
   * taken up by the next append to it (the appending process starts a worker).
   */
  readonly adoptsOrphans: boolean;
  /**
   * How an acknowledged message is sure of its receipt (its `queue.message.enqueued` audit entry):
   * - `with-message` (PostgreSQL): `append` commits each message's `receipt` in the message's own
   *   transaction;
   * - `outbox` (files): the message's record carries what its receipt says (AppendInput.receiptSource),
   *   so the record's durable write stands for both. The caller records the entry after the append
   *   without waiting for it, and the queue's reader hands back, before their delivery, the records
   *   whose entry another process was to record (QueueConsumerOptions.onReceiptRead), which may
   *   have died before doing so. The audit store chains a message's receipt once.
   */
  readonly receipts: 'with-message' | 'outbox';
  /** How the processes (or nodes) sharing this store take turns at the scheduler and the housekeeping. */
  readonly coordination: Coordination;
  stats(tenant: string, flow: string): Promise<QueueStats>;
  /**
   * The ids of every message the queue still holds: waiting, in the retry schedule, delivered but
   * not yet compacted away (files), and pending dead letters. For `svc audit --verify`'s check that
   * each has its audit entry. Reads the whole queue.
   */
  heldIds(tenant: string, flow: string): Promise<number[]>;
  /**
   * On an `outbox` store (`receipts`): the receipts the queue's records carry, every record that
   * holds one, in the segment's order (a command chains those its server did not: svc audit
   * --verify, svc store migrate). Empty on a `with-message` store. Reads the whole queue.
   */
  heldReceipts(tenant: string, flow: string): Promise<QueuedReceipt[]>;
  /** What the tenant's queues hold: the live queues and the bytes they take (the per-tenant bounds). */
  tenantUsage(tenant: string): Promise<TenantQueueUsage>;
  /** One pass giving back the space of processed messages (what it means on each backend: CompactionPass). */
  compact(): Promise<CompactionPass>;
  listDeadLetters(filter?: { tenant?: string; flow?: string }): Promise<DeadLetterRow[]>;
  /** Appends the payload as a new message (new id, fresh attempts and correlation id) and retires the entry. @throws SVC_ERR_NOT_FOUND */
  replayDeadLetter(tenant: string, flow: string, id: number, correlationId?: string): Promise<ReplayResult>;
  /** @throws SVC_ERR_NOT_FOUND */
  discardDeadLetter(tenant: string, flow: string, id: number): Promise<DeadLetter>;
  close(): Promise<void>;
}

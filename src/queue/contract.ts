/**
 * The queue contract every backend implements: the files of the state directory (FileQueueStore) and
 * PostgreSQL (pg/PgQueueStore). The queue workers, /enqueue, queue_publish, `svc dlq` and the
 * UI are written against it; the conformance suite (queue-conformance.ts) runs both.
 */
import type { DeadLetter, ReplayResult } from './file/dead-letters.js';
import type { QueueCompaction } from './file/compaction.js';
import type { ConsumerStateName, QueueConsumerOptions } from './file/queue-consumer.js';
import type { AppendInput, AppendResult, QueueStats } from './types.js';

/** How a worker is named to the operator, by every backend. */
export function workerName(pid: number, host: string): string {
  return `pid ${pid}${pid === process.pid ? ' (this server)' : ''} on ${host}`;
}

/** A pending dead letter with its queue. */
export interface DeadLetterRow extends DeadLetter {
  readonly tenant: string;
  readonly flow: string;
}

/** This process's worker of one queue. */
export interface QueueConsumerHandle {
  readonly state: ConsumerStateName;
  stats(): Promise<QueueStats>;
  /** Stops delivering; the handler in flight gets its grace period; progress is written. */
  close(): Promise<void>;
}

export interface QueueStore {
  /** @throws SvcError `SVC_ERR_INVALID_NAME` for a tenant or flow breaking the name rule */
  checkNames(tenant: string, flow: string): void;
  /** Resolves once the message is durable (fdatasync, or the COMMIT that holds it), with its id. */
  append(tenant: string, flow: string, input: AppendInput): Promise<AppendResult>;
  /** Starts this process's worker; undefined when a worker already runs here or elsewhere (another process or node). */
  startConsumer(tenant: string, flow: string, opts: QueueConsumerOptions): Promise<QueueConsumerHandle | undefined>;
  consumer(tenant: string, flow: string): QueueConsumerHandle | undefined;
  stopConsumer(tenant: string, flow: string): Promise<void>;
  /** True when another live process (or node) runs the queue's worker now. */
  consumedElsewhere(tenant: string, flow: string): Promise<boolean>;
  /** Who runs the queue's worker now (`pid N on host`, `(this server)` when it is this process); undefined: nobody. */
  workerOf(tenant: string, flow: string): Promise<string | undefined>;
  /** Every queue that holds or has held a message. */
  listQueues(): Promise<{ tenant: string; flow: string }[]>;
  stats(tenant: string, flow: string): Promise<QueueStats>;
  /** One pass giving back the space of processed messages. */
  compact(): Promise<QueueCompaction[]>;
  listDeadLetters(filter?: { tenant?: string; flow?: string }): Promise<DeadLetterRow[]>;
  /** Appends the payload as a new message (new id, fresh attempts and correlation id) and retires the entry. @throws SVC_ERR_NOT_FOUND */
  replayDeadLetter(tenant: string, flow: string, id: number, correlationId?: string): Promise<ReplayResult>;
  /** @throws SVC_ERR_NOT_FOUND */
  discardDeadLetter(tenant: string, flow: string, id: number): Promise<DeadLetter>;
  close(): Promise<void>;
}

/**
 * A lock one process (or node) at a time leads with: the scheduler's. LockFile (a lock file with a
 * lease) and NodeLease.tryLeaderLock (a PostgreSQL advisory lock) both give one.
 */
export interface LeaderLock {
  /** True when the lock was taken from a holder that stopped without releasing it. */
  readonly tookOver: boolean;
  /** Looks again whether this holder still has it (a pause past the lease loses it). */
  stillHeld(): Promise<boolean>;
  /** The same look without waiting, for a check nothing may run between (a tick about to fire). */
  stillHeldSync(): boolean;
  release(): Promise<void>;
}

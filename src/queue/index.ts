/** The durable queue library: what other layers import (the contract, the file backend, the coordination locks). */
export type {
  QueueStore,
  QueueConsumerHandle,
  QueueConsumerOptions,
  QueueHandler,
  QueueMessage,
  QueuedReceipt,
  Outcome,
  AttemptFailure,
  DeadLettering,
  ConsumerStateName,
  AppendInput,
  AppendResult,
  SegmentAppendResult,
  RowAppendResult,
  RetryPolicy,
  QueueStats,
  QueueName,
  QueueBacklog,
  DeadLetter,
  DeadLetterRow,
  ReplayResult,
  QueueCompaction,
  CompactionPass,
  TenantQueueUsage,
} from './contract.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, wireOffset, checkQueueNames } from './contract.js';
export { settlementOf, type Settlement } from './settlement.js';
export {
  type Coordination,
  stateDirectoryCoordination,
  leaseCoordination,
  SCHEDULER_LOCK,
  HOUSEKEEPING_LOCK,
} from './coordination/coordination.js';
export type { LeaderLock } from './coordination/leader-lock.js';
export type { ClusterDuty } from './coordination/cluster-duty.js';
export {
  LockFile,
  readLockOwner,
  liveLockOwner,
  pidAlive,
  type LockOwner,
  type LockFileOptions,
  type AcquireOptions,
} from './coordination/lock-file.js';
export { FileQueueStore, type FileQueueStoreOptions } from './file/file-queue-store.js';
export { QueueConsumer, type FileQueueConsumerOptions } from './file/queue-consumer.js';
export { SegmentAppender, type SegmentAppenderOptions } from './file/segment-appender.js';
export { queuePaths, consumerLockOptions, type QueuePaths } from './file/queue-paths.js';
export type { SegmentRecord } from './file/segment-record.js';
export { listQueueDirs } from './file/compaction.js';
export { readQueueSnapshot, type QueueSnapshot } from './file/queue-snapshot.js';
export { type RetryEntry } from './file/consumer-log.js';

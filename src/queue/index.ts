/** The durable queue library: what other layers import. */
export { FileQueueStore, type FileQueueStoreOptions, type DeadLetterRow } from './file/file-queue-store.js';
export type { QueueStore, QueueConsumerHandle, LeaderLock } from './contract.js';
export {
  QueueConsumer,
  type QueueConsumerOptions,
  type QueueHandler,
  type QueueMessage,
  type Outcome,
  type AttemptFailure,
  type DeadLettering,
  type ConsumerStateName,
} from './file/queue-consumer.js';
export { SegmentAppender, type SegmentAppenderOptions } from './file/segment-appender.js';
export {
  LockFile,
  readLockOwner,
  liveLockOwner,
  pidAlive,
  type LockOwner,
  type LockFileOptions,
  type AcquireOptions,
} from './file/lock-file.js';
export { queuePaths, checkQueueNames, type QueuePaths } from './file/queue-paths.js';
export type { DeadLetter, ReplayResult } from './file/dead-letters.js';
export type { QueueCompaction } from './file/compaction.js';
export {
  DEFAULT_RETRY_POLICY,
  retryDelayMs,
  type AppendInput,
  type AppendResult,
  type RetryPolicy,
  type QueueStats,
  type SegmentRecord,
} from './types.js';
export { listQueueDirs } from './file/compaction.js';
export { readQueueSnapshot, type QueueSnapshot } from './file/queue-snapshot.js';
export { type RetryEntry } from './file/consumer-log.js';

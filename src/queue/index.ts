/** The durable queue library: what other layers import. */
export { QueueStore, type QueueStoreOptions, type DeadLetterRow } from './queue-store.js';
export type { QueueBackend, QueueConsumerHandle, LeaderLock } from './backend.js';
export {
  QueueConsumer,
  type QueueConsumerOptions,
  type QueueHandler,
  type QueueMessage,
  type Outcome,
  type AttemptFailure,
  type DeadLettering,
  type ConsumerStateName,
} from './queue-consumer.js';
export { SegmentAppender, type SegmentAppenderOptions } from './segment-appender.js';
export { LockFile, readLockOwner, liveLockOwner, pidAlive, type LockOwner, type LockFileOptions, type AcquireOptions } from './lock-file.js';
export { queuePaths, checkQueueNames, type QueuePaths } from './queue-paths.js';
export type { DeadLetter, ReplayResult } from './dead-letters.js';
export type { QueueCompaction } from './compaction.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, type AppendInput, type AppendResult, type RetryPolicy, type QueueStats, type SegmentRecord } from './types.js';
export { listQueueDirs } from './compaction.js';
export { readQueueSnapshot, type QueueSnapshot } from './queue-snapshot.js';
export { type RetryEntry } from './consumer-log.js';

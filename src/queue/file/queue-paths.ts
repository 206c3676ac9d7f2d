/** Where one queue's files live: `queues/{tenant}/{flow}/`, names checked before the disk is touched. */
import { join } from 'node:path';
import { checkQueueNames } from '../contract.js';

export interface QueuePaths {
  readonly tenant: string;
  readonly flow: string;
  readonly dir: string;
  /** Append-only message segment (framed records). */
  readonly segment: string;
  /** Where the segment's tail check may start (one framed record; see tail-hint.ts). */
  readonly tailHint: string;
  /** Consumer log: checkpoint and retry schedule (framed records). */
  readonly consumerLog: string;
  /** Dead-letter file (framed records). */
  readonly deadLetters: string;
  /** Next unreserved message id (JSON, replaced atomically). */
  readonly counter: string;
  /** Held by the one process consuming this queue. */
  readonly consumerLock: string;
  /** Held briefly around each batch write to the segment, and by a drain. */
  readonly appendLock: string;
  /** Held briefly while reserving a block of ids. */
  readonly counterLock: string;
  /** Held briefly around every dead-letter file change. */
  readonly deadLetterLock: string;
}

/** @throws SvcError SVC_ERR_INVALID_NAME when `tenant` or `flow` breaks the name rule (checked before any path is made). */
export function queuePaths(queuesDir: string, tenant: string, flow: string): QueuePaths {
  checkQueueNames(tenant, flow);
  const dir = join(queuesDir, tenant, flow);
  return Object.freeze({
    tenant,
    flow,
    dir,
    segment: join(dir, 'segment.log'),
    tailHint: join(dir, 'segment.hint'),
    consumerLog: join(dir, 'consumer.log'),
    deadLetters: join(dir, 'dlq.log'),
    counter: join(dir, 'counter.json'),
    consumerLock: join(dir, 'consumer.lock'),
    appendLock: join(dir, 'append.lock'),
    counterLock: join(dir, 'counter.lock'),
    deadLetterLock: join(dir, 'dlq.lock'),
  });
}

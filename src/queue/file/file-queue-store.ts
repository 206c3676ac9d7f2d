/**
 * The queue library's front door for one process: appenders and consumers per (tenant, flow),
 * compaction, counters and dead-letter operations. It knows nothing of flows or HTTP; the
 * caller's handler decides what a message means.
 */
import { SvcError } from '../../common/errors.js';
import { dirname, join } from 'node:path';
import { tenantUsage } from './tenant-usage.js';
import { compactIdleQueue, listQueueDirs, readQueueStats } from './compaction.js';
import { discardDeadLetter, readDeadLetters, replayDeadLetter } from './dead-letters.js';
import {
  workerName,
  type AppendInput,
  type CompactionPass,
  type DeadLetter,
  type DeadLetterRow,
  type QueueCompaction,
  type QueueName,
  type QueueBacklog,
  type QueueStats,
  type QueueStore,
  type QueuedReceipt,
  type ReplayResult,
  type TenantQueueUsage,
  type SegmentAppendResult,
} from '../contract.js';
import { stateDirectoryCoordination, type Coordination } from '../coordination/coordination.js';
import { HeldLock } from '../coordination/held-lock.js';
import { liveLockOwner } from '../coordination/lock-file.js';
import { ConsumerRegistry } from '../consumer-registry.js';
import { backlogOf, queuesWithMessages } from './queues-with-messages.js';
import { consumerLockOptions, queuePaths, type QueuePaths } from './queue-paths.js';
import { QueueConsumer, type FileQueueConsumerOptions } from './queue-consumer.js';
import type { PrefixCutOptions } from './prefix-cut.js';
import { SegmentRecordCount } from './record-count.js';
import { SegmentAppender } from './segment-appender.js';
import { scanFile } from './file-io.js';
import { readConsumerState } from './consumer-log.js';
import type { SegmentRecord } from './segment-record.js';

/** How long a compaction pass waits for a busy local worker before moving on. Milliseconds. */
const LOCAL_COMPACT_WAIT_MS = 1000;
/**
 * Queues a compaction pass works on at once. Measured: 1,000 drained queues took 2.6 to 2.8 s one
 * after the other, most of it each queue's syncs and lock files.
 */
const COMPACT_CONCURRENCY = 8;

export interface FileQueueStoreOptions {
  /** The `queues/` directory (statePaths(db).queuesDir). */
  readonly queuesDir: string;
  /**
   * The state directory's `locks/` (statePaths(db).locksDir): where the scheduler's lock file is
   * (see coordination). @default the `locks` directory beside queuesDir
   */
  readonly locksDir?: string;
  /** Ids reserved per counter write; use 1 for short-lived processes such as the CLI. @default 1024 */
  readonly idBlockSize?: number;
  /** When compaction gives back the processed prefix of a queue that is not empty (prefix-cut.ts). */
  readonly prefixCut?: PrefixCutOptions;
  /** An appender's segment file is closed after this long without an append (see SegmentAppender.releaseIdleHandle). @default 30000 */
  readonly appenderIdleCloseMs?: number;
}

const DEFAULT_APPENDER_IDLE_CLOSE_MS = 30_000;

export class FileQueueStore implements QueueStore {
  readonly queuesDir: string;
  /** The processes of this state directory take turns by lock files; no queue is left without a worker by a sweep (see QueueStore). */
  readonly adoptsOrphans = false;
  readonly receipts = 'outbox';
  readonly coordination: Coordination;
  readonly #idBlockSize: number;
  readonly #prefixCut: PrefixCutOptions | undefined;
  readonly #idleCloseMs: number;
  /** Closes idle appenders' files; started with the first appender. */
  #idleSweep: NodeJS.Timeout | undefined;
  readonly #appenders = new Map<string, SegmentAppender>();
  readonly #consumers = new ConsumerRegistry<QueueConsumer>();
  /** Queues whose worker another live process was found running (servedElsewhereNow). */
  readonly #heldElsewhere = new Map<string, HeldLock>();
  /** Record counts of queues read from their files, kept per queue between figures (see SegmentRecordCount). */
  readonly #recordCounts = new Map<string, SegmentRecordCount>();
  #closed = false;

  constructor(opts: FileQueueStoreOptions) {
    this.queuesDir = opts.queuesDir;
    this.coordination = stateDirectoryCoordination(opts.locksDir ?? join(dirname(opts.queuesDir), 'locks'));
    this.#idBlockSize = opts.idBlockSize ?? 1024;
    this.#prefixCut = opts.prefixCut;
    this.#idleCloseMs = opts.appenderIdleCloseMs ?? DEFAULT_APPENDER_IDLE_CLOSE_MS;
  }

  /** The queue's file paths; throws SVC_ERR_INVALID_NAME for a tenant or flow breaking the name rule. */
  paths(tenant: string, flow: string): QueuePaths {
    return queuePaths(this.queuesDir, tenant, flow);
  }

  checkNames(tenant: string, flow: string): void {
    this.paths(tenant, flow);
  }

  /**
   * Appends a message (fresh attempt count); resolves once an fdatasync covers it, with its id
   * and the byte offset of its record in the segment. Concurrent appends share one write and one sync. Wakes this process's
   * consumer of the queue, if any.
   */
  append(tenant: string, flow: string, input: AppendInput): Promise<SegmentAppendResult> {
    if (this.#closed) return Promise.reject(new SvcError('SVC_ERR_INTERNAL', 'the queue store is closed'));
    // An appender exists only for names that passed the name rule (no name holds a '/', so the
    // key names one queue): the check and the path joins are paid once per queue, not per append.
    const key = `${tenant}/${flow}`;
    let a = this.#appenders.get(key);
    if (!a) {
      let paths: QueuePaths;
      try {
        paths = this.paths(tenant, flow);
      } catch (err) {
        return Promise.reject(err);
      }
      a = new SegmentAppender(paths, {
        idBlockSize: this.#idBlockSize,
        onAppended: (batch) => this.#consumers.get(key)?.offer(batch),
      });
      this.#appenders.set(key, a);
      this.#idleSweep ??= setInterval(
        () => void this.#releaseIdleHandles(),
        Math.max(1, Math.min(10_000, this.#idleCloseMs / 3)),
      ).unref();
    }
    return a.append(input);
  }

  /**
   * Starts this process's worker of the queue; undefined when a worker already runs here or in
   * another live process (the queue's consumer lock is held).
   */
  async startConsumer(
    tenant: string,
    flow: string,
    opts: FileQueueConsumerOptions,
  ): Promise<QueueConsumer | undefined> {
    const key = `${tenant}/${flow}`;
    if (this.#closed || this.#consumers.get(key) !== undefined) return undefined;
    const paths = this.paths(tenant, flow);
    const started = await this.#consumers.start(key, opts, (o) =>
      QueueConsumer.start(paths, {
        prefixCut: this.#prefixCut,
        unsyncedFrom: () => this.#appenders.get(key)?.unsyncedFrom,
        ...o,
      }),
    );
    if (started !== undefined) this.#heldElsewhere.delete(key);
    else {
      const held = HeldLock.observe(paths.consumerLock, consumerLockOptions(paths, opts.lockLeaseMs).leaseMs);
      if (held === undefined) this.#heldElsewhere.delete(key);
      else this.#heldElsewhere.set(key, held);
    }
    return started;
  }

  servedElsewhereNow(tenant: string, flow: string): boolean {
    const key = `${tenant}/${flow}`;
    const held = this.#heldElsewhere.get(key);
    if (held === undefined) return false;
    // A look made after this process's last durable append to the queue answers for every
    // submission asking since (HeldLock.stillHeldSince): one stat per batch, not per message.
    if (held.stillHeldSince(this.#appenders.get(key)?.resolvedAt ?? Infinity)) return true;
    this.#heldElsewhere.delete(key);
    return false;
  }

  /** This process's running consumer of the queue, if any (one closed through its handle is forgotten). */
  consumer(tenant: string, flow: string): QueueConsumer | undefined {
    return this.#consumers.get(`${tenant}/${flow}`);
  }

  /** Stops and forgets this process's consumer of the queue. */
  async stopConsumer(tenant: string, flow: string): Promise<void> {
    await this.#consumers.stop(`${tenant}/${flow}`);
  }

  /** True when the queue's consumer lock names another live process (read only; nothing is taken). */
  async consumedElsewhere(tenant: string, flow: string): Promise<boolean> {
    const owner = await liveLockOwner(this.paths(tenant, flow).consumerLock);
    return owner !== undefined && owner.pid !== process.pid;
  }

  async workerOf(tenant: string, flow: string): Promise<string | undefined> {
    const owner = await liveLockOwner(this.paths(tenant, flow).consumerLock);
    return owner === undefined ? undefined : workerName(owner.pid, owner.host);
  }

  /** Every queue with a directory under queuesDir. */
  listQueues(): Promise<QueueName[]> {
    return listQueueDirs(this.queuesDir);
  }

  /** The queues whose segment runs past their checkpoint, or whose retry schedule is not empty (queues-with-messages.ts). */
  queuesWithMessages(): Promise<QueueBacklog[]> {
    return queuesWithMessages(this.queuesDir);
  }

  backlogOf(tenant: string, flow: string): Promise<QueueBacklog | undefined> {
    return backlogOf(this.paths(tenant, flow));
  }

  /** Counters of one queue: total, processed, pending, retries scheduled, dead letters pending. */
  async stats(tenant: string, flow: string): Promise<QueueStats> {
    const c = this.consumer(tenant, flow);
    if (c) return c.stats();
    this.paths(tenant, flow); // the name rule, before a count is kept under the key
    const key = `${tenant}/${flow}`;
    let count = this.#recordCounts.get(key);
    if (count === undefined) this.#recordCounts.set(key, (count = new SegmentRecordCount()));
    return readQueueStats(this.queuesDir, tenant, flow, count);
  }

  async heldIds(tenant: string, flow: string): Promise<number[]> {
    const paths = this.paths(tenant, flow);
    const ids: number[] = [];
    await scanFile<SegmentRecord>(paths.segment, 0, (f) => ids.push(f.value.id));
    const { retries } = await readConsumerState(paths.consumerLog, paths.segment);
    for (const id of retries.keys()) ids.push(id);
    for (const d of (await readDeadLetters(paths)).pending) ids.push(d.id);
    return [...new Set(ids)].sort((a, b) => a - b);
  }

  async heldReceipts(tenant: string, flow: string): Promise<QueuedReceipt[]> {
    const out: QueuedReceipt[] = [];
    await scanFile<SegmentRecord>(this.paths(tenant, flow).segment, 0, ({ value: r, offset }) => {
      if (r.src !== undefined) out.push({ id: r.id, correlationId: r.correlation_id, offset, source: r.src });
    });
    return out;
  }

  tenantUsage(tenant: string): Promise<TenantQueueUsage> {
    return tenantUsage(this.queuesDir, tenant);
  }

  /**
   * One compaction pass over every queue: a queue this process consumes is drained if empty
   * (between deliveries); one nobody consumes is drained, or deleted when it holds nothing;
   * one another process consumes is left to that process. COMPACT_CONCURRENCY queues at a time.
   */
  async compact(): Promise<CompactionPass> {
    const queues = await this.listQueues();
    const out: QueueCompaction[] = new Array<QueueCompaction>(queues.length);
    let next = 0;
    // A queue's part of the pass waits mostly on its own syncs and locks: several at once.
    const lane = async (): Promise<void> => {
      while (next < queues.length) {
        const i = next++;
        out[i] = await this.#compactOne(queues[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(COMPACT_CONCURRENCY, queues.length) }, lane));
    return { reclaimedBy: 'pass', queues: out };
  }

  async #compactOne({ tenant, flow }: QueueName): Promise<QueueCompaction> {
    const c = this.consumer(tenant, flow);
    if (!c) return compactIdleQueue(this.paths(tenant, flow), this.#prefixCut);
    // A worker inside a long handler drains when it returns; the pass does not wait for it.
    const r = await Promise.race([
      c.compact(),
      new Promise<'deferred'>((res) => setTimeout(() => res('deferred'), LOCAL_COMPACT_WAIT_MS).unref()),
    ]);
    return {
      tenant,
      flow,
      result: r === 'deferred' ? 'deferred' : r.drained ? 'drained' : r.cutBytes > 0 ? 'trimmed' : 'kept',
    };
  }

  /** Pending dead letters, optionally of one tenant and/or flow, by queue then death order. */
  async listDeadLetters(filter: { tenant?: string; flow?: string } = {}): Promise<DeadLetterRow[]> {
    const rows: DeadLetterRow[] = [];
    for (const { tenant, flow } of await this.listQueues()) {
      if (
        (filter.tenant !== undefined && filter.tenant !== tenant) ||
        (filter.flow !== undefined && filter.flow !== flow)
      )
        continue;
      for (const e of (await readDeadLetters(this.paths(tenant, flow))).pending) rows.push({ tenant, flow, ...e });
    }
    return rows;
  }

  /**
   * Replays a pending dead letter: its payload goes to the back of the main queue as a new
   * message (new id, fresh attempts, fresh correlation id) and the entry is marked handled.
   * Throws SVC_ERR_NOT_FOUND when no such pending entry exists.
   */
  replayDeadLetter(tenant: string, flow: string, id: number, correlationId?: string): Promise<ReplayResult> {
    return replayDeadLetter(this.paths(tenant, flow), id, (input) => this.append(tenant, flow, input), correlationId);
  }

  /** Hides a pending dead letter at once (its body goes at the next drain). Throws SVC_ERR_NOT_FOUND. */
  async discardDeadLetter(tenant: string, flow: string, id: number): Promise<DeadLetter> {
    return discardDeadLetter(this.paths(tenant, flow), id);
  }

  async #releaseIdleHandles(): Promise<void> {
    const now = Date.now();
    for (const a of this.#appenders.values()) await a.releaseIdleHandle(this.#idleCloseMs, now).catch(() => false);
  }

  /** Closes every consumer (see QueueConsumer.close) and appender; runs every step even if one fails. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#idleSweep);
    const results = [
      ...(await this.#consumers.closeAll()),
      ...(await Promise.allSettled([...this.#appenders.values()].map((a) => a.close()))),
    ];
    this.#appenders.clear();
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

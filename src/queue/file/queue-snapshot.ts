/**
 * What one queue still holds, read from its files without consuming or changing anything (for
 * `svc store migrate`): the messages past the checkpoint, the retry schedule, the pending dead
 * letters, and the next id the queue may issue.
 */
import { readConsumerState, type RetryEntry } from './consumer-log.js';
import { readDeadLetters } from './dead-letters.js';
import type { DeadLetter } from '../contract.js';
import { scanFile } from './file-io.js';
import { readCounter } from './id-allocator.js';
import type { QueuePaths } from './queue-paths.js';
import type { SegmentRecord } from './segment-record.js';

export interface QueueSnapshot {
  readonly tenant: string;
  readonly flow: string;
  /** Messages waiting for their first delivery, in segment (FIFO) order. */
  readonly fresh: readonly SegmentRecord[];
  /** Messages waiting for a retry, soonest first. */
  readonly retries: readonly RetryEntry[];
  /** Dead letters neither replayed nor discarded, in the order they died. */
  readonly deadLetters: readonly DeadLetter[];
  /**
   * One past the highest id the queue has issued or reserved (the id counter, or higher when a
   * record carries a higher id): ids below it must never be issued again.
   */
  readonly nextId: number;
}

/**
 * Reads the queue's files. Only consistent while no worker consumes the queue (the caller holds
 * its consumer lock). A message whose retry record or dead letter was written but whose checkpoint
 * was not (a crash between the two) is reported once, as the retry or the dead letter: its outcome
 * was decided, and a message id is in one place only.
 */
export async function readQueueSnapshot(paths: QueuePaths): Promise<QueueSnapshot> {
  const state = await readConsumerState(paths.consumerLog, paths.segment);
  const scan = await scanFile<SegmentRecord>(paths.segment, state.ck.off);
  const deadLetters = (await readDeadLetters(paths)).pending;
  const dead = new Set(deadLetters.map((d) => d.id));
  const retries = [...state.retries.values()]
    .filter((e) => !dead.has(e.id))
    .sort((a, b) => a.due - b.due || a.id - b.id);
  const fresh = scan.frames.map((f) => f.value).filter((r) => !state.retries.has(r.id) && !dead.has(r.id));
  let highest = 0;
  for (const r of [...fresh, ...retries, ...deadLetters]) highest = Math.max(highest, r.id);
  return {
    tenant: paths.tenant,
    flow: paths.flow,
    fresh,
    retries,
    deadLetters,
    nextId: Math.max(await readCounter(paths.counter), highest + 1),
  };
}

/** A queue worker started through the contract that records what it is handed and what its callbacks report (for the conformance suite). */
import { waitFor } from '../../helpers/wait.js';
import type {
  AttemptFailure,
  DeadLettering,
  Outcome,
  QueueConsumerHandle,
  QueueConsumerOptions,
  QueueMessage,
  QueueStore,
} from '../../../src/queue/contract.js';

/** Longest any test waits for something to happen. Milliseconds. */
export const WAIT_MS = 10_000;

/** Idle poll of the suite's workers: short, so what another handle appends is picked up soon. Milliseconds. */
export const POLL_MS = 20;

/** Decides a delivery's outcome; `nth` counts the worker's deliveries from 1. */
export type Decide = (msg: QueueMessage, nth: number) => Outcome | Promise<Outcome>;

export const ackAll: Decide = () => ({ kind: 'ack' });

export interface RecordedWorker {
  readonly handle: QueueConsumerHandle;
  /** Every delivery, in the order the handler was called. */
  readonly seen: QueueMessage[];
  /** When each delivery reached the handler (epoch milliseconds), by index of `seen`. */
  readonly seenAtMs: number[];
  readonly failures: AttemptFailure[];
  readonly deadLettered: DeadLettering[];
  /** Waits until at least `n` deliveries were made; returns the first `n`. */
  delivered(n: number): Promise<QueueMessage[]>;
}

/** Waits until `pred` holds (at most WAIT_MS). */
export async function until(what: string, pred: () => boolean | Promise<boolean>): Promise<void> {
  await waitFor(what, async () => (await pred()) || undefined, WAIT_MS, 10);
}

/**
 * Starts the queue's worker on `backend` with `decide` as its handler; fails the test when the
 * backend does not start one. `opts` adds to (or replaces) the suite's defaults.
 */
export async function startRecorded(
  backend: QueueStore,
  tenant: string,
  flow: string,
  decide: Decide = ackAll,
  opts: Partial<Omit<QueueConsumerOptions, 'handler'>> = {},
): Promise<RecordedWorker> {
  const seen: QueueMessage[] = [];
  const seenAtMs: number[] = [];
  const failures: AttemptFailure[] = [];
  const deadLettered: DeadLettering[] = [];
  const handle = await backend.startConsumer(tenant, flow, {
    pollIntervalMs: POLL_MS,
    ...opts,
    handler: async (msg) => {
      seen.push(msg);
      seenAtMs.push(Date.now());
      return decide(msg, seen.length);
    },
    onAttemptFailed: (f) => {
      failures.push(f);
      opts.onAttemptFailed?.(f);
    },
    onDeadLettered: (d) => {
      deadLettered.push(d);
      opts.onDeadLettered?.(d);
    },
  });
  if (handle === undefined) throw new Error(`no worker started for ${tenant}/${flow}`);
  return {
    handle,
    seen,
    seenAtMs,
    failures,
    deadLettered,
    delivered: async (n) => {
      await until(`${n} deliveries of ${tenant}/${flow} (${seen.length} so far)`, () => seen.length >= n);
      return seen.slice(0, n);
    },
  };
}

/**
 * The per-minute rollups of `svc serve` (docs/ui.md, Charts and live numbers): counted in memory
 * by the executor and the engine (app/runtime/rollup-recorder.ts), handed to the event log's
 * writer every FLUSH_MS and once more at shutdown, after the doors have closed and before the log
 * does (closers run in reverse order). The writer adds them to the store on its own thread.
 */
import { RollupRecorder } from '../app/runtime/rollup-recorder.js';
import type { DlqTarget } from '../app/use-cases/dlq.js';
import { sampleQueues } from '../app/use-cases/queue-activity.js';
import type { Logger } from '../common/logger.js';
import type { Closers } from './closers.js';
import type { ServeStores } from './stores.js';

/** How often the counted rows go to the writer: a chart is at most this much behind. */
export const ROLLUP_FLUSH_MS = 5_000;

export function startRollups(stores: Pick<ServeStores, 'events'>, closers: Closers): RollupRecorder {
  const recorder = new RollupRecorder();
  const flush = (): void => stores.events.writeRollups(recorder.drain());
  const timer = setInterval(flush, ROLLUP_FLUSH_MS);
  timer.unref();
  closers.add(() => {
    clearInterval(timer);
    flush();
  });
  return recorder;
}

/** How often each queue's figures are sampled for the Queues page's chart (the last sample of a minute is kept). */
export const QUEUE_SAMPLE_MS = 15_000;

/** Samples every queue's figures now and every QUEUE_SAMPLE_MS, and hands them to the event writer. */
export function startQueueSampler(
  stores: Pick<ServeStores, 'events'>,
  target: DlqTarget,
  closers: Closers,
  log: Logger,
): void {
  let running = false;
  const sample = async (): Promise<void> => {
    if (running) return; // a slow round is not stacked on
    running = true;
    try {
      stores.events.writeQueueSamples(await sampleQueues(target));
    } catch (err) {
      log.warn({ err }, 'queue figures could not be sampled for the Queues chart (the next round tries again)');
    } finally {
      running = false;
    }
  };
  void sample();
  const timer = setInterval(() => void sample(), QUEUE_SAMPLE_MS);
  timer.unref();
  closers.add(() => clearInterval(timer));
}

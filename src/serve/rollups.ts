/**
 * The per-minute rollups of `svc serve` (docs/ui.md, Charts and live numbers): counted in memory
 * by the executor and the engine (app/runtime/rollup-recorder.ts), handed to the event log's
 * writer every FLUSH_MS and once more at shutdown, after the doors have closed and before the log
 * does (closers run in reverse order). The writer adds them to the store on its own thread.
 */
import { RollupRecorder } from '../app/runtime/rollup-recorder.js';
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

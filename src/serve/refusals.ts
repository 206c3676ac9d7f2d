/** The gate's refusal records, with the timer that closes their folding window and a last close at stop. */
import type { Logger } from '../common/logger.js';
import { refusalRecords, type RefusalRecords } from '../gate/refusal-records.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { startPeriodicTask } from '../housekeeping/periodic-task.js';
import type { Closers } from './closers.js';
import type { ServeStores } from './stores.js';

export function startRefusalRecords(stores: ServeStores, log: Logger, closers: Closers): RefusalRecords {
  const records = refusalRecords(stores.events, stores.audit);
  const windowMs = housekeepingIntervals().refusalWindowMs;
  const task = startPeriodicTask({ name: 'refusal summaries', run: () => records.closeWindow(), intervalMs: () => windowMs, log });
  // Runs before the stores close (closers run in reverse), so the last window's summaries are kept.
  closers.add(async () => {
    await task.stop();
    records.closeWindow();
  });
  return records;
}

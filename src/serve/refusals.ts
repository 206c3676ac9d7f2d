/** The gate's refusal records, with the timer that closes their folding window and a last close at stop. */
import type { Logger } from '../common/logger.js';
import type { GateSinks } from '../gate/gate.js';
import { refusalRecords } from '../gate/refusal-records.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { startPeriodicTask } from '../housekeeping/periodic-task.js';
import type { Closers } from './closers.js';
import type { ServeStores } from './stores.js';

/** `counted`: told of every refusal's status (metrics), before its records are folded. */
export function startRefusalRecords(
  stores: ServeStores,
  log: Logger,
  closers: Closers,
  counted?: (status: number) => void,
): GateSinks {
  const records = refusalRecords(stores.events, stores.audit);
  const windowMs = housekeepingIntervals().refusalWindowMs;
  const task = startPeriodicTask({
    name: 'refusal summaries',
    run: () => records.closeWindow(),
    intervalMs: () => windowMs,
    log,
  });
  // Runs before the stores close (closers run in reverse), so the last window's summaries are kept.
  closers.add(async () => {
    await task.stop();
    records.closeWindow();
  });
  if (counted === undefined) return records;
  return {
    refused: (r) => {
      counted(r.status);
      records.refused(r);
    },
  };
}

/**
 * Log retention: rows of log.db older than `log_retention_days` are deleted; the daily files
 * `logs/events-YYYY-MM-DD.jsonl` live one day longer than their rows; today's file is never removed.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EventLogRepo } from '../store/event-log-repo.js';

const DAY_MS = 86_400_000;
/** Row ids per DELETE transaction; the event loop turns between them. */
const SLICE_ROWS = 5000;

export interface RetentionResult {
  rowsDeleted: number;
  filesDeleted: string[];
}

export interface RetentionOptions {
  /** @default Date.now() */
  now?: number;
  /** Daily file prefix. @default 'events' */
  prefix?: string;
  /** Asked between slices of the row deletion; true stops the cycle there (shutdown). */
  stopping?: () => boolean;
}

/** One cycle. `days` is `log_retention_days` read at the start of the cycle (minimum 1). */
export async function runLogRetention(repo: EventLogRepo, logsDir: string, days: number, opts: RetentionOptions = {}): Promise<RetentionResult> {
  const now = opts.now ?? Date.now();
  const prefix = opts.prefix ?? 'events';
  const keepDays = Math.max(1, Math.floor(days));
  // In slices, with a turn of the event loop between them: requests are served meanwhile.
  const goOn = () => new Promise<boolean>((r) => setImmediate(() => r(opts.stopping?.() !== true)));
  const rowsDeleted = await repo.deleteOlderThanInSlices(new Date(now - keepDays * DAY_MS).toISOString(), SLICE_ROWS, goOn);
  // A file of day D holds rows up to the end of D: it goes one day after its last row could.
  const fileCutoffDay = new Date(now - (keepDays + 1) * DAY_MS).toISOString().slice(0, 10);
  const today = new Date(now).toISOString().slice(0, 10);
  const pattern = new RegExp(`^${prefix}-(\\d{4}-\\d{2}-\\d{2})\\.jsonl$`);
  const filesDeleted: string[] = [];
  let names: string[];
  try {
    names = readdirSync(logsDir);
  } catch {
    names = []; // no logs directory yet
  }
  for (const name of names) {
    const day = pattern.exec(name)?.[1];
    if (day === undefined || day === today || day >= fileCutoffDay) continue;
    rmSync(join(logsDir, name), { force: true });
    filesDeleted.push(name);
  }
  return { rowsDeleted, filesDeleted };
}

/**
 * Log retention: rows of log.db older than `log_retention_days` are deleted; the daily files
 * `logs/events-YYYY-MM-DD.jsonl` live one day longer than their rows; today's file is never removed.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EventLogRepo } from '../store/event-log-repo.js';

const DAY_MS = 86_400_000;

export interface RetentionResult {
  rowsDeleted: number;
  filesDeleted: string[];
}

/**
 * One cycle. `days` is `log_retention_days` read at the start of the cycle (minimum 1).
 * @param prefix daily file prefix. @default 'events'
 */
export function runLogRetention(repo: EventLogRepo, logsDir: string, days: number, now: number = Date.now(), prefix = 'events'): RetentionResult {
  const keepDays = Math.max(1, Math.floor(days));
  const rowsDeleted = repo.deleteOlderThan(new Date(now - keepDays * DAY_MS).toISOString());
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

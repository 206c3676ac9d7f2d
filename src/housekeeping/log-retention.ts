/**
 * Log retention: rows of log.db older than `log_retention_days` are deleted (trace rows live in
 * the same table and go with them), then the pages they held are given back to the file system;
 * the daily files `logs/events-YYYY-MM-DD.jsonl` live one day longer than their rows; today's file
 * is never removed. On PostgreSQL (an EventLog given `pg`) the days before the cutoff's day go by
 * dropping their partitions and the rest of the cut in slices (docs/events.md, "On PostgreSQL").
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RowRetentionRequest, RowRetentionStats } from '../store/event-log/event-log.js';

const DAY_MS = 86_400_000;
/**
 * Row ids per DELETE slice. The slices run on the event writer's thread between its batches
 * (EventLog.retainRows), so a slice's length is how long a batch may wait, never the event loop.
 */
const SLICE_ROWS = 2000;

/** Where the rows are deleted: the event writer (EventLog.retainRows). */
export interface LogRows {
  retainRows(request: RowRetentionRequest, stopping?: () => boolean): Promise<RowRetentionStats>;
}

export interface RetentionResult extends Omit<RowRetentionStats, 'stopped'> {
  filesDeleted: string[];
}

export interface RetentionOptions {
  /** @default Date.now() */
  now?: number;
  /** Daily file prefix. @default 'events' */
  prefix?: string;
  /** Asked while the rows are deleted and the pages given back; true stops the cycle there (shutdown). */
  stopping?: () => boolean;
  /** Pages per incremental-vacuum slice. @default VACUUM_PAGES_PER_SLICE (store/sqlite/auto-vacuum.ts) */
  vacuumPagesPerSlice?: number;
  /** Row ids per DELETE slice. @default 2000 */
  sliceRows?: number;
}

/** One cycle. `days` is `log_retention_days` read at the start of the cycle (minimum 1). */
export async function runLogRetention(
  rows: LogRows,
  logsDir: string,
  days: number,
  opts: RetentionOptions = {},
): Promise<RetentionResult> {
  const now = opts.now ?? Date.now();
  const prefix = opts.prefix ?? 'events';
  const keepDays = Math.max(1, Math.floor(days));
  const cutoffIso = new Date(now - keepDays * DAY_MS).toISOString();
  const { stopped: _stopped, ...stats } = await rows.retainRows(
    { cutoffIso, sliceRows: opts.sliceRows ?? SLICE_ROWS, vacuumPagesPerSlice: opts.vacuumPagesPerSlice },
    () => opts.stopping?.() === true,
  );
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
  return { ...stats, filesDeleted };
}

/**
 * Giving freed space back to the file system. Every database is created with
 * `auto_vacuum = INCREMENTAL` (see db.ts): a delete leaves its pages on the free list, and
 * `PRAGMA incremental_vacuum(N)` moves up to N pages from the end of the file into free slots and
 * cuts the file. Here: the mode of a file, free pages given back in short slices, and the offline
 * conversion of a file created without the mode.
 */
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';

type Db = Database.Database;

/** `PRAGMA auto_vacuum` answers 0 (none), 1 (full) or 2 (incremental). */
export const AUTO_VACUUM_INCREMENTAL = 2;

/**
 * Pages per `incremental_vacuum` statement: 256 pages (1 MiB at SQLite's 4 KiB page). Each
 * statement is one write transaction (journal, fsyncs), so it holds the write lock and the event
 * loop for one slice only. Measured on a log database of 1,000,000 rows with half deleted: see
 * docs/operations.md ("Disk space").
 */
export const VACUUM_PAGES_PER_SLICE = 256;

export function autoVacuumMode(db: Db): number {
  return db.pragma('auto_vacuum', { simple: true }) as number;
}

/** Size of a file in bytes; 0 when it does not exist. */
export function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

import type { ReclaimOptions, ReclaimResult } from '../contracts/index.js';

export type { ReclaimOptions, ReclaimResult };

/**
 * Gives the free pages of `db` back to the file system, `pagesPerSlice` at a time, one short
 * write transaction each, awaiting `between()` after each. A file without incremental
 * auto-vacuum has nothing to give (its free pages are reused by later inserts): nothing is done.
 */
export async function reclaimFreePagesInSlices(db: Db, opts: ReclaimOptions): Promise<ReclaimResult> {
  const result: ReclaimResult = { pagesFreed: 0, slices: 0, longestSliceMs: 0, stopped: false };
  if (autoVacuumMode(db) !== AUTO_VACUUM_INCREMENTAL) return result;
  const pages = Math.max(1, Math.floor(opts.pagesPerSlice ?? VACUUM_PAGES_PER_SLICE));
  const freeList = db.prepare<[], number>('PRAGMA freelist_count').pluck();
  let free = freeList.get() ?? 0;
  while (free > 0) {
    const started = performance.now();
    // exec, not a prepared statement's run(): the pragma frees one page per step and exec steps it to the end.
    db.exec(`PRAGMA incremental_vacuum(${pages})`);
    result.longestSliceMs = Math.max(result.longestSliceMs, performance.now() - started);
    result.slices++;
    const left = freeList.get() ?? 0;
    if (left >= free) break; // no progress (another connection is refilling the list): try next cycle
    result.pagesFreed += free - left;
    free = left;
    if (free > 0 && !(await opts.between())) {
      result.stopped = true;
      break;
    }
  }
  return result;
}

/** What a database file is like on disk, read without changing it. */
export interface DatabaseFileSpace {
  readonly path: string;
  readonly bytes: number;
  /** 0 none, 1 full, 2 incremental. */
  readonly autoVacuum: number;
  /** Pages on the free list (reused by inserts; given back only in incremental mode). */
  readonly freePages: number;
  readonly pageBytes: number;
}

/** Reads a file's auto-vacuum mode and free pages (read-only connection). */
export function inspectDatabaseFile(path: string): DatabaseFileSpace {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    return {
      path,
      bytes: fileBytes(path),
      autoVacuum: autoVacuumMode(db),
      freePages: db.pragma('freelist_count', { simple: true }) as number,
      pageBytes: db.pragma('page_size', { simple: true }) as number,
    };
  } finally {
    db.close();
  }
}

export interface VacuumFileResult {
  readonly path: string;
  readonly bytesBefore: number;
  readonly bytesAfter: number;
  /** `converted`: rebuilt by a full VACUUM in incremental mode; `reclaimed`: already incremental, free pages given back. */
  readonly action: 'converted' | 'reclaimed';
  readonly ms: number;
}

/**
 * Offline: converts a file to incremental auto-vacuum with a full VACUUM (which rebuilds it
 * without free pages), or, when it already is, gives all its free pages back in one statement.
 * Both hold the file's write lock while they run; a full VACUUM needs free disk space of up to
 * twice the file's size (a temporary copy and the rollback journal).
 */
export function vacuumFile(path: string, busyTimeoutMs = 5000): VacuumFileResult {
  const bytesBefore = fileBytes(path);
  const started = performance.now();
  const db = new Database(path, { fileMustExist: true });
  let action: VacuumFileResult['action'];
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('journal_mode = DELETE');
    db.pragma('synchronous = FULL');
    if (autoVacuumMode(db) === AUTO_VACUUM_INCREMENTAL) {
      db.exec('PRAGMA incremental_vacuum');
      action = 'reclaimed';
    } else {
      db.pragma('auto_vacuum = INCREMENTAL');
      db.exec('VACUUM');
      action = 'converted';
    }
  } finally {
    db.close();
  }
  return { path, bytesBefore, bytesAfter: fileBytes(path), action, ms: performance.now() - started };
}

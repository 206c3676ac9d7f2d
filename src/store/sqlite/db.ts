/**
 * Opens the service's SQLite files: rollback journal, full synchronous mode, incremental
 * auto-vacuum (space freed by deletes can be given back to the file system), a busy timeout so
 * several processes can share one state directory, and numbered migrations applied on open.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { AUTO_VACUUM_INCREMENTAL, autoVacuumMode, fileBytes } from './auto-vacuum.js';

export type Db = Database.Database;

/** One numbered schema step; `version` is strictly increasing within a database. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * A file created without incremental auto-vacuum is converted when it is opened (one full VACUUM,
 * which holds the write lock while it runs) only up to this size. Measured on log rows: about
 * 21 ms per MiB (5.6 MiB 129 ms, 22.9 MiB 491 ms, 92 MiB 1.96 s), so at most ~0.2 s, once in the
 * file's life. A larger file is left as it is and `svc serve` warns about it at start
 * (`svc storage vacuum` converts it offline).
 */
export const CONVERT_AT_OPEN_MAX_BYTES = 8 * 1024 * 1024;

export interface OpenDbOptions {
  /** Create the file (and its directory) when missing. @default true */
  create?: boolean;
  readonly?: boolean;
  /** How long a writer waits for another process's lock, in ms. @default 5000 */
  busyTimeoutMs?: number;
}

export function openDb(path: string, migrations: readonly Migration[], opts: OpenDbOptions = {}): Db {
  const create = opts.create ?? true;
  if (create && !opts.readonly) mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { fileMustExist: !create || opts.readonly === true, readonly: opts.readonly ?? false });
  db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
  if (!opts.readonly) {
    db.pragma('journal_mode = DELETE');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    useIncrementalAutoVacuum(db, path);
    migrate(db, migrations);
  }
  return db;
}

/**
 * Before the first table: a new file takes the mode from this pragma. An older file created
 * without it keeps mode 0 (none) until a full VACUUM rebuilds it; that is done here only for a
 * small file (CONVERT_AT_OPEN_MAX_BYTES).
 */
function useIncrementalAutoVacuum(db: Db, path: string): void {
  db.pragma('auto_vacuum = INCREMENTAL');
  if (autoVacuumMode(db) === AUTO_VACUUM_INCREMENTAL || db.memory) return;
  if (fileBytes(path) > CONVERT_AT_OPEN_MAX_BYTES) return;
  try {
    db.exec('VACUUM');
  } catch {
    // Busy (another process holds the file) or no room for the copy: the file works as before,
    // the next open tries again, and `svc serve` names it at start while it is unconverted.
  }
}

/** Applies every migration newer than the file's version, each in one IMMEDIATE transaction. */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const applied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.get(m.version)) continue;
    // Another process may apply the same step between our check and our lock: re-check inside.
    db.transaction(() => {
      if (applied.get(m.version)) return;
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    }).immediate();
  }
}

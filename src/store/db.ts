/**
 * Opens the service's SQLite files: rollback journal, full synchronous mode, a busy timeout so
 * several processes can share one state directory, and numbered migrations applied on open.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = Database.Database;

/** One numbered schema step; `version` is strictly increasing within a database. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

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
    migrate(db, migrations);
  }
  return db;
}

/** Applies every migration newer than the file's version, each in one IMMEDIATE transaction. */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
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

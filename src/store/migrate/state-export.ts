/**
 * The state directory's SQLite files read for `svc store migrate`: opened read only (nothing is
 * migrated or converted), each held in one read transaction for the whole copy, so every table is
 * read from one snapshot of its file, and tables read page by page in a stable order.
 */
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { auditMigrations } from '../sqlite/migrations/audit.js';
import { registryMigrations } from '../sqlite/migrations/registry.js';
import { uiMigrations } from '../sqlite/migrations/ui.js';
import type { Migration } from '../sqlite/db.js';

/** The databases of a state directory that are copied (log.db is not: see docs/scale-out.md). */
export type ExportFile = 'registry' | 'audit' | 'ui';

/** One table of a part: where it lives and the order its rows are read (and inserted) in. */
export interface ExportTable {
  readonly file: ExportFile;
  readonly table: string;
  /** `rowid` (insertion order: deploy order for flow_versions) or the primary key of a WITHOUT ROWID table. */
  readonly order: 'rowid' | readonly string[];
  /** Rows per page (and per INSERT): small for tables holding artifacts. */
  readonly pageRows: number;
  /** A bigserial column whose sequence is moved past the highest copied value (ids are kept). */
  readonly serial?: string;
}

/** One unit of progress of a migration: copied, and recorded done, as a whole. */
export interface ExportPart {
  readonly part: string;
  readonly tables: readonly ExportTable[];
}

const rows = (file: ExportFile, table: string, extra: Partial<ExportTable> = {}): ExportTable => ({
  file,
  table,
  order: 'rowid',
  pageRows: 1000,
  ...extra,
});

/**
 * Everything copied from the SQLite files, in an order that satisfies the target's foreign keys.
 * Not copied: ui_sessions (sessions belong to one installation; users sign in again) and log.db.
 */
export const EXPORT_PARTS: readonly ExportPart[] = Object.freeze([
  { part: 'tenants', tables: [rows('registry', 'tenants')] },
  { part: 'api_keys', tables: [rows('registry', 'api_keys', { serial: 'id' })] },
  { part: 'artifacts', tables: [rows('registry', 'artifacts', { pageRows: 32 })] },
  {
    part: 'flow_versions',
    tables: [
      rows('registry', 'flow_versions'),
      rows('registry', 'flow_latest'),
      rows('registry', 'flow_sources', { pageRows: 64 }),
    ],
  },
  {
    part: 'proto_descriptors',
    tables: [rows('registry', 'proto_descriptors', { pageRows: 32 }), rows('registry', 'proto_latest')],
  },
  { part: 'certificates', tables: [rows('registry', 'certificates', { serial: 'id', pageRows: 200 })] },
  { part: 'task_runs', tables: [rows('registry', 'task_runs')] },
  { part: 'system_config', tables: [rows('registry', 'system_config')] },
  { part: 'trace_config', tables: [rows('registry', 'trace_config')] },
  {
    part: 'flow_state',
    tables: [
      rows('registry', 'flow_inbox', { pageRows: 200 }),
      rows('registry', 'flow_correlations', { pageRows: 200 }),
    ],
  },
  {
    part: 'audit',
    tables: [
      rows('audit', 'audit_entries', { order: ['tenant', 'seq'] }),
      rows('audit', 'audit_heads', { order: ['tenant'] }),
    ],
  },
  { part: 'ui_users', tables: [rows('ui', 'ui_users', { serial: 'id' })] },
  { part: 'ui_secret', tables: [rows('ui', 'ui_secret')] },
]);

/** The migrations each file is written by, to tell a file of a newer svc. */
export const EXPORT_MIGRATIONS: Readonly<Record<ExportFile, readonly Migration[]>> = {
  registry: registryMigrations,
  audit: auditMigrations,
  ui: uiMigrations,
};

export type ExportRow = Record<string, unknown>;

/** One SQLite file held open on one read snapshot until `close()`. */
export class SqliteSnapshot {
  readonly path: string;
  readonly #db: Database.Database;

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.#db = db;
  }

  /**
   * Opens `path` read only and starts its snapshot (a SHARED lock: writers of other processes wait,
   * up to their 5 s busy timeout, until `close()`). Undefined when the file does not exist.
   */
  static open(path: string): SqliteSnapshot | undefined {
    if (!existsSync(path)) return undefined;
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      db.exec('BEGIN');
      db.prepare('SELECT count(*) FROM sqlite_master').get(); // takes the snapshot now
    } catch (err) {
      db.close();
      throw err;
    }
    return new SqliteSnapshot(path, db);
  }

  hasTable(table: string): boolean {
    return this.#db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
  }

  /** Versions in the file's schema_migrations (empty for a file without it). */
  appliedVersions(): { version: number; appliedAt: string }[] {
    if (!this.hasTable('schema_migrations')) return [];
    return this.#db
      .prepare('SELECT version, applied_at AS appliedAt FROM schema_migrations ORDER BY version')
      .all() as { version: number; appliedAt: string }[];
  }

  /** Rows of `t` in its order, `t.pageRows` at a time (a table missing from an older file has none). */
  *pages(t: ExportTable): Generator<ExportRow[]> {
    if (!this.hasTable(t.table)) return;
    const keys = t.order === 'rowid' ? ['rowid'] : t.order;
    const keyList = keys.map((k) => `"${k}"`).join(', ');
    const select =
      t.order === 'rowid'
        ? `SELECT rowid AS "__k0", * FROM "${t.table}"`
        : `SELECT ${keys.map((k, i) => `"${k}" AS "__k${i}"`).join(', ')}, * FROM "${t.table}"`;
    const first = this.#db.prepare(`${select} ORDER BY ${keyList} LIMIT ?`);
    const next = this.#db.prepare(
      `${select} WHERE (${keyList}) > (${keys.map(() => '?').join(', ')}) ORDER BY ${keyList} LIMIT ?`,
    );
    let after: unknown[] | undefined;
    for (;;) {
      const page = (after === undefined ? first.all(t.pageRows) : next.all(...after, t.pageRows)) as ExportRow[];
      if (page.length === 0) return;
      const last = page[page.length - 1]!;
      after = keys.map((_, i) => last[`__k${i}`]);
      yield page.map((r) => {
        const out: ExportRow = {};
        for (const [k, v] of Object.entries(r)) if (!k.startsWith('__k')) out[k] = v;
        return out;
      });
      if (page.length < t.pageRows) return;
    }
  }

  close(): void {
    try {
      this.#db.exec('ROLLBACK');
    } catch {
      // Nothing to end: the transaction was never started or already ended.
    }
    this.#db.close();
  }
}

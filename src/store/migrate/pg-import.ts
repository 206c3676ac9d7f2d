/**
 * The PostgreSQL side of `svc store migrate` (src/app/maintenance/store-migrate.ts): the target checked and
 * claimed for one source installation, rows inserted as they are (ON CONFLICT DO NOTHING), and
 * each part recorded done in `store_imports` in the transaction of its last rows, so a rerun
 * copies nothing twice and finishes what a killed run left.
 */
import { SvcError } from '../../common/errors.js';
import { bundledMigrations, migratePg, schemaVersion } from '../pg/migrate.js';
import { PgDb, type PgSession, type PgTx } from '../pg/pg-db.js';
import { parseStoreUrl } from '../pg/store-url.js';

/** Why a migration is refused before anything is written. */
export type MigrationRefusal =
  'source_missing' | 'source_in_use' | 'source_newer' | 'target_newer' | 'target_other_installation' | 'target_busy';

/** A migration refused before it wrote anything to the target. */
export class StoreMigrationRefusedError extends SvcError {
  constructor(
    readonly reason: MigrationRefusal,
    message: string,
  ) {
    super('SVC_ERR_CONFLICT', message);
    this.name = 'StoreMigrationRefusedError';
  }
}

/** The part that claims a store for its source installation. */
export const INSTALLATION_PART = 'installation';

/** The session advisory lock held for a whole run: one migration into a schema at a time. */
const IMPORT_LOCK_CLASS = 0x5356_494d; // 'SVIM'

/**
 * Tables only an installation's own use fills: a target with rows in any of them, and no record of
 * importing this source, holds another installation's data.
 */
const DATA_TABLES = [
  'tenants',
  'api_keys',
  'system_config',
  'trace_config',
  'artifacts',
  'proto_descriptors',
  'certificates',
  'flow_inbox',
  'flow_correlations',
  'audit_entries',
  'ui_users',
  'queue_heads',
  'queue_messages',
  'queue_dead_letters',
] as const;

/** A part already copied by an earlier run. */
export interface ImportedPart {
  readonly copied: number;
  readonly doneAt: string;
}

/** One queue's rows for the 0002 tables. */
export interface ImportQueue {
  readonly tenant: string;
  readonly flow: string;
  /** Waiting messages; `dueMs` null for a first delivery, else the retry's due time (epoch ms). */
  readonly messages: readonly {
    readonly id: number;
    readonly correlationId: string;
    readonly enqueuedAt: string;
    readonly attempts: number;
    /** JSON text. */
    readonly payload: string;
    readonly traceparent: string | null;
    readonly tracestate: string | null;
    readonly dueMs: number | null;
  }[];
  /** Pending dead letters in the order they died (their `seq` is drawn in this order). */
  readonly deadLetters: readonly {
    readonly id: number;
    readonly payload: string;
    readonly enqueuedAt: string;
    readonly failedAt: string;
    readonly attempts: number;
    readonly lastError: string;
  }[];
  /** One past the highest id ever issued: queue_heads.next_id is raised to it, never lowered. */
  readonly nextId: number;
}

/** The store being imported into, checked and claimed for `sourceId`; `close()` releases it. */
export class PgImportTarget {
  readonly db: PgDb;
  /** The schema's migration version after the run's migrate step. */
  readonly schemaVersion: number;
  readonly #session: PgSession;
  readonly #sourceId: string;

  private constructor(db: PgDb, session: PgSession, sourceId: string, schemaVersion: number) {
    this.db = db;
    this.#session = session;
    this.#sourceId = sourceId;
    this.schemaVersion = schemaVersion;
  }

  /**
   * Connects, takes the schema's import lock, refuses a newer schema or another installation's
   * data (before writing anything), migrates the schema and claims it for `sourceId`.
   * @throws StoreMigrationRefusedError; StorageUnavailableError when the server cannot be reached
   */
  static async open(url: string, sourceId: string, sourcePath: string): Promise<PgImportTarget> {
    const db = new PgDb(parseStoreUrl(url), { maxConnections: 2, applicationName: 'svc-store-migrate' });
    let session: PgSession | undefined;
    try {
      session = await db.openSession();
      const lock = await session.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [
        IMPORT_LOCK_CLASS,
        db.schema,
      ]);
      if (lock.rows[0]?.ok !== true)
        throw new StoreMigrationRefusedError(
          'target_busy',
          `another svc store migrate is running against ${db.url.redacted}`,
        );
      await refuseNewerSchema(db);
      await refuseOtherInstallation(db, sourceId);
      let version: number;
      try {
        version = (await migratePg(db)).version;
      } catch (err) {
        if (err instanceof SvcError && err.code === 'SVC_ERR_CONFLICT')
          throw new StoreMigrationRefusedError('target_newer', err.message);
        throw err;
      }
      await db.transaction(async (tx) => {
        await refuseOtherInstallation(tx, sourceId); // again, now the tables exist, in the claim's transaction
        await tx.query(
          'INSERT INTO store_imports (source_id, part, copied, done_at, detail) VALUES ($1, $2, 0, $3, $4) ON CONFLICT DO NOTHING',
          [sourceId, INSTALLATION_PART, new Date().toISOString(), sourcePath],
        );
      });
      return new PgImportTarget(db, session, sourceId, version);
    } catch (err) {
      await session?.end();
      await db.close();
      throw err;
    }
  }

  /** Parts an earlier run finished, by name. */
  async doneParts(): Promise<Map<string, ImportedPart>> {
    const r = await this.db.query<{ part: string; copied: number; done_at: string }>(
      'SELECT part, copied, done_at FROM store_imports WHERE source_id = $1 AND part <> $2',
      [this.#sourceId, INSTALLATION_PART],
    );
    return new Map(r.rows.map((row) => [row.part, { copied: row.copied, doneAt: row.done_at }]));
  }

  transaction<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /** Records `part` done, inside the transaction of its last rows. */
  async markDone(tx: PgTx, part: string, copied: number): Promise<void> {
    await tx.query('INSERT INTO store_imports (source_id, part, copied, done_at) VALUES ($1, $2, $3, $4)', [
      this.#sourceId,
      part,
      copied,
      new Date().toISOString(),
    ]);
  }

  async close(): Promise<void> {
    try {
      await this.#session.end();
    } finally {
      await this.db.close();
    }
  }
}

/**
 * Inserts rows as they are (every column named by the first row), skipping any that is already
 * there; resolves with the number inserted.
 */
export async function insertRows(tx: PgTx, table: string, rows: readonly Record<string, unknown>[]): Promise<number> {
  if (rows.length === 0) return 0;
  const columns = Object.keys(rows[0]!);
  const params: unknown[] = [];
  const tuples = rows.map((r) => `(${columns.map((c) => `$${params.push(r[c])}`).join(', ')})`);
  const sql = `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT DO NOTHING`;
  return (await tx.query(sql, params)).rowCount ?? 0;
}

/** Moves the sequence of a bigserial column past its highest value, so new rows never take a copied id. */
export async function moveSerialPast(tx: PgTx, table: string, column: string): Promise<void> {
  await tx.query(
    `SELECT setval(pg_get_serial_sequence($1, $2), m) FROM (SELECT max("${column}") AS m FROM "${table}") s WHERE m IS NOT NULL`,
    [table, column],
  );
}

/** Writes one queue's waiting messages, dead letters and id counter; resolves with the rows inserted. */
export async function insertQueue(tx: PgTx, q: ImportQueue): Promise<number> {
  let copied = 0;
  const page = 500;
  for (let i = 0; i < q.messages.length; i += page) {
    const rows = q.messages.slice(i, i + page).map((m) => ({
      tenant: q.tenant,
      flow: q.flow,
      id: m.id,
      correlation_id: m.correlationId,
      enqueued_at: m.enqueuedAt,
      attempts: m.attempts,
      payload: m.payload,
      traceparent: m.traceparent,
      tracestate: m.tracestate,
      due_ms: m.dueMs,
    }));
    copied += await insertRows(tx, 'queue_messages', rows);
  }
  for (let i = 0; i < q.deadLetters.length; i += page) {
    const rows = q.deadLetters.slice(i, i + page).map((d) => ({
      tenant: q.tenant,
      flow: q.flow,
      id: d.id,
      payload: d.payload,
      enqueued_at: d.enqueuedAt,
      failed_at: d.failedAt,
      attempts: d.attempts,
      last_error: d.lastError,
    }));
    copied += await insertRows(tx, 'queue_dead_letters', rows);
  }
  await tx.query(
    `INSERT INTO queue_heads (tenant, flow, next_id) VALUES ($1, $2, $3)
       ON CONFLICT (tenant, flow) DO UPDATE SET next_id = GREATEST(queue_heads.next_id, excluded.next_id)`,
    [q.tenant, q.flow, q.nextId],
  );
  return copied;
}

async function refuseNewerSchema(db: PgDb): Promise<void> {
  if (!(await tableExists(db, 'schema_migrations'))) return;
  const known = bundledMigrations().length;
  const current = await schemaVersion(db);
  if (current > known) {
    throw new StoreMigrationRefusedError(
      'target_newer',
      `the store's schema is at version ${current}, newer than this build knows (${known}); run the newer svc's store migrate, or point --to at another schema`,
    );
  }
}

/** Refuses a store claimed by another source, or holding rows this source did not put there. */
async function refuseOtherInstallation(q: PgTx, sourceId: string): Promise<void> {
  if (await tableExists(q, 'store_imports')) {
    const other = await q.query<{ source_id: string; detail: string | null }>(
      'SELECT source_id, detail FROM store_imports WHERE source_id <> $1 AND part = $2 LIMIT 1',
      [sourceId, INSTALLATION_PART],
    );
    const row = other.rows[0];
    if (row !== undefined) {
      throw new StoreMigrationRefusedError(
        'target_other_installation',
        `the store already holds installation ${row.source_id}${row.detail ? ` (copied from ${row.detail})` : ''}, not ${sourceId}; migrate into an empty schema`,
      );
    }
    const mine = await q.query('SELECT 1 FROM store_imports WHERE source_id = $1 LIMIT 1', [sourceId]);
    if (mine.rows.length > 0) return; // an earlier run of this source: resume
  }
  for (const table of DATA_TABLES) {
    if (!(await tableExists(q, table))) continue;
    if ((await q.query(`SELECT 1 FROM "${table}" LIMIT 1`)).rows.length > 0) {
      throw new StoreMigrationRefusedError(
        'target_other_installation',
        `the store already holds data of another installation (table ${table} is not empty); migrate into an empty schema`,
      );
    }
  }
}

async function tableExists(q: PgTx, table: string): Promise<boolean> {
  return (await q.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table])).rows[0]?.t != null;
}

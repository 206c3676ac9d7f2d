/**
 * `svc store migrate`: copies an installation's state directory into a PostgreSQL store, rows as
 * they are (ids, hashes, instants byte for byte), so audit chains verify and keys keep working on
 * the target. Each part (a table or a few tied ones, one queue) is recorded done in the target in
 * the transaction that finishes it: a rerun copies nothing twice and completes a killed run.
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { statePaths, type StatePaths } from '../../common/paths.js';
import {
  consumerLockOptions,
  FileQueueStore,
  listQueueDirs,
  LockFile,
  queuePaths,
  readQueueSnapshot,
  type QueueSnapshot,
} from '../../queue/index.js';
import {
  insertQueue,
  insertRows,
  moveSerialPast,
  PgImportTarget,
  StoreMigrationRefusedError,
  type ImportQueue,
} from '../../store/migrate/pg-import.js';
import { chainLeftSpools } from '../../store/audit/audit-spool.js';
import { SqliteAuditStore } from '../../store/sqlite/sqlite-audit-store.js';
import { openDb, type Db } from '../../store/sqlite/db.js';
import { auditMigrations } from '../../store/sqlite/migrations/audit.js';
import { chainHeldReceipts } from '../runtime/queue-receipts.js';
import { stateDirUsers } from './state-users.js';
import {
  EXPORT_MIGRATIONS,
  EXPORT_PARTS,
  SqliteSnapshot,
  type ExportFile,
  type ExportPart,
} from '../../store/migrate/state-export.js';

export { StoreMigrationRefusedError, type MigrationRefusal } from '../../store/migrate/pg-import.js';

export interface StoreMigrateOptions {
  /** The source state directory (or its registry.db). */
  readonly from: string;
  /** The target store: `postgres://user@host:port/database[?schema=name]`. */
  readonly to: string;
  /** Told as each part finishes (the CLI prints progress on stderr). */
  readonly onPart?: (outcome: PartOutcome) => void;
  /**
   * Test only: a pause after every committed transaction, so a test can kill the command half-way
   * (the CLI reads it from SVC_TEST_MIGRATE_PAUSE_MS). Milliseconds. @default 0
   */
  readonly pauseAfterCommitMs?: number;
}

export interface PartOutcome {
  /** A table group (`tenants`, `audit`, ...) or `queue <tenant>/<flow>`. */
  readonly part: string;
  /** `already_done`: an earlier run finished it; nothing was read or written for it now. */
  readonly status: 'copied' | 'already_done';
  /** Rows of the part in the source (for an already done part, as that run counted them). */
  readonly rows: number;
  /** Rows this run inserted (fewer than `rows` when a killed run had inserted some). */
  readonly inserted: number;
  /** For a queue copied now: its messages by kind, and the id its counter continues from. */
  readonly queue?: {
    readonly fresh: number;
    readonly retries: number;
    readonly deadLetters: number;
    readonly nextId: number;
  };
}

export interface StoreMigrateResult {
  readonly stateDir: string;
  /** The source's identity, recorded in the target (see installationId). */
  readonly installationId: string;
  /** The target URL, password masked. */
  readonly target: string;
  readonly schemaVersion: number;
  readonly parts: readonly PartOutcome[];
  /** What is deliberately left behind, and why. */
  readonly notCopied: readonly string[];
}

export const NOT_COPIED: readonly string[] = Object.freeze([
  'ui_sessions: sessions belong to one installation; UI users sign in again',
  'log.db and logs/: the event log is operational history; it stays in the state directory',
]);

/** The refusal exit: nothing was written to the target. */
function refuse(reason: ConstructorParameters<typeof StoreMigrationRefusedError>[0], message: string): never {
  throw new StoreMigrationRefusedError(reason, message);
}

export async function migrateStore(opts: StoreMigrateOptions): Promise<StoreMigrateResult> {
  const paths = sourcePaths(opts.from);
  if (!existsSync(paths.registryDb))
    refuse('source_missing', `no state directory at ${opts.from} (${paths.registryDb} does not exist)`);
  const users = await stateDirUsers(paths);
  if (users.length > 0) {
    refuse(
      'source_in_use',
      `the state directory ${paths.stateDir} is in use by ${users.map((u) => `pid ${u.pid} on ${u.host} (${u.lock})`).join(', ')}; stop svc serve first`,
    );
  }
  // Audit entries a killed server left spooled are chained first, as a server start would, and the
  // receipts its queues' records carry that it did not chain, as its workers would.
  chainLeftSpools(paths);
  await chainLeftReceipts(paths);
  const files = openSnapshots(paths);
  const locks: LockFile[] = [];
  try {
    refuseNewerSource(files);
    const installationId = installationIdOf(files.registry!);
    const queues = await listQueueDirs(paths.queuesDir);
    // Held for the whole run: a worker started meanwhile cannot consume what is being copied.
    for (const q of queues) {
      const qp = queuePaths(paths.queuesDir, q.tenant, q.flow);
      const lock = await LockFile.tryAcquire(qp.consumerLock, consumerLockOptions(qp));
      if (lock === undefined)
        refuse(
          'source_in_use',
          `the queue ${q.tenant}/${q.flow} of ${paths.stateDir} is consumed by a running process; stop svc serve first`,
        );
      locks.push(lock);
    }
    const target = await PgImportTarget.open(opts.to, installationId, paths.stateDir);
    try {
      const run = new MigrationRun(target, opts);
      const done = await target.doneParts();
      const parts: PartOutcome[] = [];
      for (const part of EXPORT_PARTS) parts.push(await run.tablePart(part, files, done.get(part.part)));
      for (const q of queues) {
        const name = `queue ${q.tenant}/${q.flow}`;
        parts.push(
          await run.queuePart(name, done.get(name), () =>
            readQueueSnapshot(queuePaths(paths.queuesDir, q.tenant, q.flow)),
          ),
        );
      }
      return {
        stateDir: paths.stateDir,
        installationId,
        target: target.db.url.redacted,
        schemaVersion: target.schemaVersion,
        parts,
        notCopied: NOT_COPIED,
      };
    } finally {
      await target.close();
    }
  } finally {
    for (const f of Object.values(files)) f?.close();
    for (const l of locks) await l.release().catch(() => undefined);
  }
}

/**
 * The source's identity: a hash of when its registry database was created (the applied_at of its
 * first schema migration). Stable for the life of the state directory, kept by a copy or a restore
 * of it, different for another installation; nothing is written to the source to make it.
 */
export function installationIdOf(registry: SqliteSnapshot): string {
  const first = registry.appliedVersions()[0];
  if (first === undefined)
    refuse('source_missing', `${registry.path} is not a svc registry database (it has no schema_migrations)`);
  return `inst-${createHash('sha256').update(`registry created ${first.appliedAt}`).digest('hex').slice(0, 20)}`;
}

type Snapshots = Record<ExportFile, SqliteSnapshot | undefined>;

/** One copy into the target: tables page by page, queues whole. */
class MigrationRun {
  constructor(
    private readonly target: PgImportTarget,
    private readonly opts: StoreMigrateOptions,
  ) {}

  async tablePart(part: ExportPart, files: Snapshots, done: { copied: number } | undefined): Promise<PartOutcome> {
    if (done !== undefined)
      return this.#report({ part: part.part, status: 'already_done', rows: done.copied, inserted: 0 });
    let rows = 0;
    let inserted = 0;
    for (const t of part.tables) {
      const file = files[t.file];
      if (file === undefined) continue; // audit.db or ui.db never created: nothing to copy
      for (const page of file.pages(t)) {
        rows += page.length;
        inserted += await this.target.transaction((tx) => insertRows(tx, t.table, page));
        await this.#pause();
      }
    }
    await this.target.transaction(async (tx) => {
      for (const t of part.tables) if (t.serial !== undefined) await moveSerialPast(tx, t.table, t.serial);
      await this.target.markDone(tx, part.part, rows);
    });
    await this.#pause();
    return this.#report({ part: part.part, status: 'copied', rows, inserted });
  }

  /** A queue in one transaction: its messages are deleted as they are consumed, so a half-copied queue must never be finished by re-reading the source after the target was used. */
  async queuePart(
    name: string,
    done: { copied: number } | undefined,
    read: () => Promise<QueueSnapshot>,
  ): Promise<PartOutcome> {
    if (done !== undefined) return this.#report({ part: name, status: 'already_done', rows: done.copied, inserted: 0 });
    const snap = await read();
    const q = importQueue(snap);
    const rows = q.messages.length + q.deadLetters.length;
    const inserted = await this.target.transaction(async (tx) => {
      const n = await insertQueue(tx, q);
      await this.target.markDone(tx, name, rows);
      return n;
    });
    await this.#pause();
    const queue = {
      fresh: snap.fresh.length,
      retries: snap.retries.length,
      deadLetters: snap.deadLetters.length,
      nextId: snap.nextId,
    };
    return this.#report({ part: name, status: 'copied', rows, inserted, queue });
  }

  #report(outcome: PartOutcome): PartOutcome {
    this.opts.onPart?.(outcome);
    return outcome;
  }

  async #pause(): Promise<void> {
    const ms = this.opts.pauseAfterCommitMs ?? 0;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }
}

function importQueue(s: QueueSnapshot): ImportQueue {
  const trace = (m: { traceparent?: string | undefined; tracestate?: string | undefined }) => ({
    traceparent: m.traceparent ?? null,
    tracestate: m.tracestate ?? null,
  });
  return {
    tenant: s.tenant,
    flow: s.flow,
    messages: [
      ...s.fresh.map((m) => ({
        id: m.id,
        correlationId: m.correlation_id,
        enqueuedAt: m.enqueued_at,
        attempts: m.attempts,
        payload: JSON.stringify(m.payload),
        ...trace(m),
        dueMs: null,
      })),
      ...s.retries.map((e) => ({
        id: e.id,
        correlationId: e.correlation_id,
        enqueuedAt: e.enqueued_at,
        attempts: e.attempts,
        payload: JSON.stringify(e.payload),
        ...trace(e),
        dueMs: e.due,
      })),
    ],
    deadLetters: s.deadLetters.map((d) => ({
      id: d.id,
      payload: JSON.stringify(d.payload),
      enqueuedAt: d.enqueued_at,
      failedAt: d.failed_at,
      attempts: d.attempts,
      lastError: d.last_error,
    })),
    nextId: s.nextId,
  };
}

/** `--from` names the state directory; its registry.db is accepted too. */
function sourcePaths(from: string): StatePaths {
  const isDir = existsSync(from) && statSync(from).isDirectory();
  return statePaths(isDir ? join(from, 'registry.db') : from);
}

function openSnapshots(paths: StatePaths): Snapshots {
  const files: Snapshots = { registry: undefined, audit: undefined, ui: undefined };
  try {
    files.registry = SqliteSnapshot.open(paths.registryDb);
    files.audit = SqliteSnapshot.open(paths.auditDb);
    files.ui = SqliteSnapshot.open(paths.uiDb);
    if (files.registry === undefined)
      refuse('source_missing', `no state directory at ${paths.stateDir} (${paths.registryDb} does not exist)`);
  } catch (err) {
    for (const f of Object.values(files)) f?.close();
    throw err;
  }
  return files;
}

/** A file written by a newer svc may hold tables or columns this build would not copy. */
function refuseNewerSource(files: Snapshots): void {
  for (const [name, file] of Object.entries(files) as [ExportFile, SqliteSnapshot | undefined][]) {
    if (file === undefined) continue;
    const known = new Set(EXPORT_MIGRATIONS[name].map((m) => m.version));
    const unknown = file.appliedVersions().filter((v) => !known.has(v.version));
    if (unknown.length > 0)
      refuse(
        'source_newer',
        `${file.path} was written by a newer svc (schema version ${unknown[unknown.length - 1]!.version}); run that version's store migrate`,
      );
  }
}

/** chainHeldReceipts over a stopped state directory's queues: audit.db is opened only if a record holds a receipt. */
async function chainLeftReceipts(paths: StatePaths): Promise<number> {
  const queues = new FileQueueStore({ queuesDir: paths.queuesDir, locksDir: paths.locksDir, idBlockSize: 1 });
  let db: Db | undefined;
  try {
    return await chainHeldReceipts(queues, () => new SqliteAuditStore((db = openDb(paths.auditDb, auditMigrations))));
  } finally {
    db?.close();
    await queues.close();
  }
}

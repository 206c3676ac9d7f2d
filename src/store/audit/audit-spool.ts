/**
 * The audit writer's spool: a per-process append-only file that makes a batch of audit entries
 * durable with one synced write, so an acknowledgement (the 202 of /enqueue) waits for that write
 * instead of the chain's commit (a rollback-journal commit: journal, directory and database synced,
 * two to three times the time of one synced append, measured in docs/performance.md). The entries
 * are chained into `audit.db` right after, in the same order, by the writer thread, which records
 * in the same transaction the sequence number of the last spooled entry it chained (the spool's
 * mark, `audit_spool_marks`). A process that dies between the two leaves the entries past its mark
 * in its spool, and the next server on the state directory chains them (recoverAuditSpools), so an
 * acknowledged entry is never lost and never chained twice.
 *
 * File: `<stateDir>/audit-spool/<pid>-<start>-<token>.spool`, each batch one record: a newline, then
 * the JSON array `[firstSeq, tenant, eventType, createdAt, correlationId, payload, ...]` (five
 * strings per entry, as packAuditEntries lays them out; entry k has sequence number firstSeq + k).
 * Numbers rise from record to record and may skip: a receipt handed to the chain without a spool
 * write keeps its number (audit-thread.ts), and appears in a later record only if a wait needed it.
 * The leading newline ends any record a failed write left torn, so the next one still parses; a
 * record that does not parse was never acknowledged by the spool and is skipped. `<start>` is the
 * process's start time in clock ticks (Linux), so a PID used again by another process does not keep
 * a dead process's spool from being recovered, and a paused owner (SIGSTOP) is still alive: its
 * spool is never recovered under it.
 */
import { randomBytes } from 'node:crypto';
import { constants, existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { isErrno } from '../../common/errno.js';
import type { StatePaths } from '../../common/paths.js';
import { openDb } from '../sqlite/db.js';
import { auditMigrations } from '../sqlite/migrations/audit.js';
import { SqliteAuditStore } from '../sqlite/sqlite-audit-store.js';
import { unpackAuditEntries, type PreparedAuditEntry } from '../contracts/index.js';

const SUFFIX = '.spool';
/** Appends, created when missing; each write returns once durable (fdatasync semantics). */
const SPOOL_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC;
/** `<pid>-<start>-<token>.spool`: what a spool's name must look like before it is read or removed. */
const NAME = /^(\d+)-(\d+)-([0-9a-f]{16})\.spool$/;

/** A spooled entry with its sequence number in its spool. */
export interface SpooledEntry {
  readonly seq: number;
  readonly entry: PreparedAuditEntry;
}

/** The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat); undefined without /proc or when it is gone. */
function startTicks(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** True when the process that made the spool `name` still runs (the same PID and start time). */
export function spoolOwnerAlive(name: string): boolean {
  const m = NAME.exec(name);
  if (m === null) return true; // not a spool's name: never touched
  const pid = Number(m[1]);
  const start = m[2]!;
  if (pid === process.pid) return start === (startTicks('self') ?? '0');
  const now = startTicks(pid);
  if (now !== undefined) return now === start;
  if (start !== '0') return false; // /proc answers on this host, and the PID is gone
  // No /proc (not Linux): the PID alone says it.
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return isErrno(err, 'EPERM');
  }
}

/** The records of a spool file in order, torn or unreadable records skipped. */
export function readSpool(path: string): SpooledEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  const out: SpooledEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      continue; // torn by a failed write: never acknowledged as spooled
    }
    if (!Array.isArray(rec) || typeof rec[0] !== 'number' || !rec.slice(1).every((v) => typeof v === 'string'))
      continue;
    unpackAuditEntries(rec.slice(1) as string[]).forEach((entry, k) =>
      out.push({ seq: (rec[0] as number) + k, entry }),
    );
  }
  return out;
}

/** Spool files in `dir` whose process is gone, by name. */
export function deadSpools(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  return names.filter((n) => NAME.test(n) && !spoolOwnerAlive(n)).sort();
}

/** This process's spool: batches appended with one synced write each, by one caller at a time. */
export class AuditSpool {
  readonly name: string;
  readonly path: string;
  readonly #fh: FileHandle;
  /** Bytes written since the last truncation. */
  #size = 0;

  private constructor(name: string, path: string, fh: FileHandle) {
    this.name = name;
    this.path = path;
    this.#fh = fh;
  }

  /** Creates this process's spool in `dir` (made when missing). */
  static async open(dir: string): Promise<AuditSpool> {
    mkdirSync(dir, { recursive: true });
    const name = `${process.pid}-${startTicks('self') ?? '0'}-${randomBytes(8).toString('hex')}${SUFFIX}`;
    const path = join(dir, name);
    return new AuditSpool(name, path, await open(path, SPOOL_FLAGS, 0o600));
  }

  /** Bytes in the file since it was last emptied. */
  get size(): number {
    return this.#size;
  }

  /** Appends one batch (packed entries, at least one, the first numbered `firstSeq`); resolves once it is durable. */
  async write(firstSeq: number, packed: readonly string[]): Promise<void> {
    // The same text as JSON.stringify([firstSeq, ...packed]) without copying the batch into a new array.
    const buf = Buffer.from(`\n[${firstSeq},${JSON.stringify(packed).slice(1)}`);
    let took = 0;
    while (took < buf.length) took += (await this.#fh.write(buf, took, buf.length - took, null)).bytesWritten;
    this.#size += buf.length;
  }

  /**
   * Empties the file: call only once every entry written is chained (its mark committed). Not
   * synced: were the old records back after a crash, their numbers are at or below the mark.
   */
  async truncate(): Promise<void> {
    await this.#fh.truncate(0);
    this.#size = 0;
  }

  /** Closes the file; `remove` deletes it too (every entry chained: a clean stop). */
  async close(remove: boolean): Promise<void> {
    await this.#fh.close();
    if (remove) {
      try {
        unlinkSync(this.path);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
  }
}

/** What recoverAuditSpools needs of the audit store (SqliteAuditStore). */
export interface SpoolChainer {
  chainSpooled(spool: string, read: () => readonly SpooledEntry[]): number;
  spoolMarks(): string[];
  forgetSpools(spools: readonly string[]): void;
}

/** What a recovery found: dead processes' spools, and the entries chained from them. */
export interface SpoolRecovery {
  readonly spools: number;
  readonly entries: number;
}

/**
 * Chains what dead processes left in their spools in `dir` (the entries past each spool's mark),
 * then removes those files; then, when it found any or `sweepMarks` asks, the marks of spools whose
 * files are gone and whose process is too (a clean stop leaves its mark). Safe beside live writers
 * and other recoverers: a live process's spool is never read, and each dead one is read inside the
 * chaining transaction (SqliteAuditStore.chainSpooled). Touches the database only for those.
 */
export function recoverAuditSpools(dir: string, store: SpoolChainer, sweepMarks = false): SpoolRecovery {
  let spools = 0;
  let entries = 0;
  for (const name of deadSpools(dir)) {
    const path = join(dir, name);
    entries += store.chainSpooled(name, () => readSpool(path));
    try {
      unlinkSync(path);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    spools++;
  }
  if (spools === 0 && !sweepMarks) return { spools, entries };
  // A mark goes only after its file: a recoverer reading the file later then finds none.
  const gone = store.spoolMarks().filter((name) => !spoolOwnerAlive(name) && !existsSync(join(dir, name)));
  store.forgetSpools(gone);
  return { spools, entries };
}

/**
 * recoverAuditSpools for a command that has no audit store open (`svc store migrate`): opens
 * `auditDb` only when a dead process's spool is there.
 */
export function chainLeftSpools(paths: Pick<StatePaths, 'auditDb' | 'auditSpoolDir'>): SpoolRecovery {
  if (deadSpools(paths.auditSpoolDir).length === 0) return { spools: 0, entries: 0 };
  const db = openDb(paths.auditDb, auditMigrations);
  try {
    return recoverAuditSpools(paths.auditSpoolDir, new SqliteAuditStore(db), true);
  } finally {
    db.close();
  }
}

/**
 * The audit trail (`audit.db`): one hash chain per tenant. Each entry's hash covers its fields and
 * the previous entry's hash, so altering, removing or inserting an entry breaks the chain.
 *
 * Hash of an entry: hex SHA-256 of the UTF-8 bytes of
 *   JSON.stringify([tenant, seq, event_type, created_at, correlation_id, payload, prev_hash])
 * where `payload` is the stored JSON text (hashed as that string, never re-serialised) and
 * `prev_hash` of seq 1 is 64 zeros. A JSON array of strings and one integer has exactly one
 * encoding, so the form is canonical and leaves no ambiguity between fields.
 *
 * Appends run in one `BEGIN IMMEDIATE` transaction that reads the chain's head, so several
 * processes appending to one chain at once still produce one unbroken chain.
 *
 * The contract (AuditStore) is implemented here and by store/pg/pg-audit-store.ts; both take the
 * hashing (chainEntry), row mapping and chain checking (AuditChainCheck) of store/contracts/audit.ts,
 * so both backends write and verify byte-identical chains.
 */
import type { Db } from './db.js';
import { ReceiptClaims, type ReceiptKey } from './receipt-claims.js';
import { SvcError } from '../../common/errors.js';
import {
  GENESIS_HASH,
  type AuditEntryInput,
  type AuditEntry,
  type PreparedAuditEntry,
  type AuditVerifyResult,
  type AuditStore,
  type AuditHead,
  type AuditPageQuery,
  chainEntry,
  prepareAuditEntry,
  type AuditRow,
  auditEntryFromRow,
  AUDIT_COLUMNS,
  AUDIT_VERIFY_PAGE,
  type AuditSnapshot,
  AuditChainCheck,
} from '../contracts/index.js';

/** Where a writer's spool stands: the last of its entries chained (store/audit/audit-spool.ts). */
export interface SpoolMark {
  readonly spool: string;
  readonly seq: number;
}

/** A spooled entry as chainSpooled takes it (audit-spool.ts readSpool). */
export interface SpooledAuditEntry {
  readonly seq: number;
  readonly entry: PreparedAuditEntry;
}

/** The entry of a queued message's acknowledgement: chained once per message (receipt-claims.ts). */
const RECEIPT_EVENT = 'queue.message.enqueued';

/** Rows per multi-row INSERT while chaining (measured: 2.7 -> 2.1 us a row against one INSERT each). */
const INSERT_CHUNK = 16;

export class SqliteAuditStore implements AuditStore {
  readonly #db: Db;
  readonly #head;
  readonly #lastEntry;
  readonly #insert;
  readonly #insertChunk;
  readonly #setHead;
  readonly #latest;
  readonly #count;
  readonly #headAndMax;
  readonly #page;
  readonly #eventTypes;
  readonly #appendBatch: (entries: readonly PreparedAuditEntry[]) => AuditEntry[];
  readonly #spoolMark;
  readonly #setSpoolMark;
  readonly #forgetSpool;
  readonly #spoolNames;
  readonly #claims: ReceiptClaims;

  constructor(db: Db) {
    this.#db = db;
    this.#head = db.prepare<[string], { seq: number; hash: string }>(
      'SELECT seq, hash FROM audit_heads WHERE tenant = ?',
    );
    this.#lastEntry = db.prepare<[string], { seq: number; hash: string }>(
      'SELECT seq, hash FROM audit_entries WHERE tenant = ? ORDER BY seq DESC LIMIT 1',
    );
    this.#insert = db.prepare(`INSERT INTO audit_entries (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#insertChunk = db.prepare(
      `INSERT INTO audit_entries (${AUDIT_COLUMNS}) VALUES ${Array.from({ length: INSERT_CHUNK }, () => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    );
    this.#setHead = db.prepare(
      'INSERT INTO audit_heads (tenant, seq, hash) VALUES (?, ?, ?) ON CONFLICT (tenant) DO UPDATE SET seq = excluded.seq, hash = excluded.hash',
    );
    this.#latest = db.prepare<[string, number], AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE tenant = ? ORDER BY seq DESC LIMIT ?`,
    );
    this.#count = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM audit_entries WHERE tenant = ?');
    // One statement, so the head and the highest seq come from the same snapshot.
    this.#headAndMax = db.prepare<{ tenant: string }, AuditSnapshot>(
      'SELECT (SELECT seq FROM audit_heads WHERE tenant = @tenant) AS head_seq, (SELECT hash FROM audit_heads WHERE tenant = @tenant) AS head_hash, (SELECT MAX(seq) FROM audit_entries WHERE tenant = @tenant) AS max_seq',
    );
    this.#page = db.prepare<[string, number, number, number], AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE tenant = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
    );
    this.#eventTypes = db.prepare<[string], { event_type: string }>(
      'SELECT DISTINCT event_type FROM audit_entries WHERE tenant = ? ORDER BY event_type',
    );
    this.#appendBatch = (entries) =>
      this.#db.transaction((batch: readonly PreparedAuditEntry[]) => this.#chain(batch)).immediate(entries);
    this.#spoolMark = db.prepare<[string], { seq: number }>('SELECT seq FROM audit_spool_marks WHERE spool = ?');
    this.#setSpoolMark = db.prepare<[string, number]>(
      'INSERT INTO audit_spool_marks (spool, seq) VALUES (?, ?) ON CONFLICT (spool) DO UPDATE SET seq = max(seq, excluded.seq)',
    );
    this.#forgetSpool = db.prepare<[string]>('DELETE FROM audit_spool_marks WHERE spool = ?');
    this.#spoolNames = db.prepare<[], { spool: string }>('SELECT spool FROM audit_spool_marks ORDER BY spool');
    this.#claims = new ReceiptClaims(db);
  }

  /**
   * appendPrepared for the writer thread: each of `marks` moves a spool's mark in the same
   * transaction as the entries (they are that spool's entries up to it).
   */
  appendMarked(entries: readonly PreparedAuditEntry[], marks: readonly SpoolMark[]): AuditEntry[] {
    if (marks.length === 0) return this.appendPrepared(entries);
    return this.#db
      .transaction(() => {
        const out = this.#chain(entries);
        for (const m of marks) this.#setSpoolMark.run(m.spool, m.seq);
        return out;
      })
      .immediate();
  }

  /**
   * Chains the entries of a spool its writer did not chain (those past its mark), in one IMMEDIATE
   * transaction that also moves the mark past them. `read` is called inside the transaction (under
   * the database's write lock): a spool another process chained and removed meanwhile reads empty,
   * so run twice, or by two processes at once, each entry is chained once. Returns how many it chained
   * (an acknowledgement chained already by a queue's reader is passed over: receipt-claims.ts).
   */
  chainSpooled(spool: string, read: () => readonly SpooledAuditEntry[]): number {
    return this.#db
      .transaction(() => {
        const mark = this.#spoolMark.get(spool)?.seq ?? 0;
        const todo = read().filter((s) => s.seq > mark);
        if (todo.length === 0) return 0;
        const chained = this.#chain(todo.map((s) => s.entry)).length;
        this.#setSpoolMark.run(
          spool,
          todo.reduce((m, s) => Math.max(m, s.seq), mark),
        );
        return chained;
      })
      .immediate();
  }

  /** The spools with a mark, by name. */
  spoolMarks(): string[] {
    return this.#spoolNames.all().map((r) => r.spool);
  }

  /** Removes spools' marks: only once their files are gone for good (a spool's name is never used again). */
  forgetSpools(spools: readonly string[]): void {
    if (spools.length === 0) return;
    this.#db.transaction(() => spools.forEach((s) => this.#forgetSpool.run(s))).immediate();
  }

  /**
   * Appends one entry in its own IMMEDIATE transaction (the CLI's path) and returns it chained.
   * @throws SVC_ERR_CONFLICT for the acknowledgement of a message that has its entry already (receipt-claims.ts)
   */
  append(input: AuditEntryInput): AuditEntry {
    const [entry] = this.#appendBatch([prepareAuditEntry(input)]);
    if (entry === undefined)
      throw new SvcError('SVC_ERR_CONFLICT', `the ${input.eventType} entry of that message is chained already`);
    return entry;
  }

  /** Appends entries, in order, in one IMMEDIATE transaction: all or none. */
  appendMany(entries: readonly AuditEntryInput[]): AuditEntry[] {
    return this.appendPrepared(entries.map((e) => prepareAuditEntry(e)));
  }

  /** Like appendMany, for entries already through prepareAuditEntry (the batching writer's path). */
  appendPrepared(entries: readonly PreparedAuditEntry[]): AuditEntry[] {
    if (entries.length === 0) return [];
    return this.#appendBatch(entries);
  }

  /**
   * Runs `fn` inside one IMMEDIATE transaction of the audit database. A state change made in `fn`
   * (even in another database) and its audit entry are then ordered the same way in every process.
   * Lock order is audit first, then registry: never call this (or append) while holding a registry
   * write transaction, or two processes can wait on each other until the busy timeout.
   */
  transaction<T>(fn: () => T): T {
    return this.#db.transaction(fn).immediate();
  }

  /** The newest `limit` entries of the chain, oldest of them first. */
  latest(tenant: string, limit: number): AuditEntry[] {
    return this.#latest.all(tenant, limit).map(auditEntryFromRow).reverse();
  }

  count(tenant: string): number {
    return this.#count.get(tenant)!.n;
  }

  page(tenant: string, q: AuditPageQuery): AuditEntry[] {
    const where = ['tenant = ?'];
    const args: unknown[] = [tenant];
    if (q.beforeSeq !== undefined) {
      where.push('seq < ?');
      args.push(q.beforeSeq);
    }
    if (q.eventType !== undefined) {
      where.push('event_type = ?');
      args.push(q.eventType);
    }
    if (q.actor !== undefined) {
      // json_valid first: an altered entry that is no longer JSON is skipped here (verify reports it), not an error.
      where.push(
        "CASE WHEN json_valid(payload) AND json_type(payload) = 'object' THEN json_extract(payload, '$.actor') END = ?",
      );
      args.push(q.actor);
    }
    return this.#db
      .prepare<unknown[], AuditRow>(
        `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`,
      )
      .all(...args, q.limit)
      .map(auditEntryFromRow);
  }

  eventTypes(tenant: string): string[] {
    return this.#eventTypes.all(tenant).map((r) => r.event_type);
  }

  entriesOfTypes(tenant: string, types: readonly string[], afterSeq: number, limit: number): AuditEntry[] {
    if (types.length === 0) return [];
    return this.#db
      .prepare<unknown[], AuditRow>(
        `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE tenant = ? AND seq > ? AND event_type IN (${types.map(() => '?').join(', ')}) ORDER BY seq LIMIT ?`,
      )
      .all(tenant, afterSeq, ...types, limit)
      .map(auditEntryFromRow);
  }

  /**
   * Recomputes the chain as of the moment the call starts (entries appended meanwhile are left for
   * the next run). Reports the first broken seq and why: a changed entry, a missing or inserted
   * one, or a chain cut short at its end.
   */
  verify(tenant: string): AuditVerifyResult {
    const check = new AuditChainCheck(tenant, this.#headAndMax.get({ tenant })!);
    if (check.empty) return check.finish();
    let pageRows: number;
    do {
      pageRows = 0;
      // Row by row within the page, not `.all()`: a page of rows alive across a scavenge survives
      // it, and steady survival grows V8's young generation; with auditHash's form (see there) the
      // peak memory of a verify no longer grows with the chain (it did: 62/90/119/139 MiB of RSS at
      // 10k/100k/1M/3M entries).
      for (const row of this.#page.iterate(tenant, check.after, check.upTo, AUDIT_VERIFY_PAGE)) {
        pageRows += 1;
        const broken = check.row(row);
        if (broken !== undefined) return broken;
      }
    } while (pageRows === AUDIT_VERIFY_PAGE);
    return check.finish();
  }

  /** Chains prepared entries onto their tenants' heads; runs inside the IMMEDIATE transaction. */
  #chain(batch: readonly PreparedAuditEntry[]): AuditEntry[] {
    const heads = new Map<string, AuditHead>();
    const out: AuditEntry[] = [];
    // Rows wait for a full chunk; a head comes from `heads` once its tenant has a row in this batch,
    // so nothing reads the table for a row not yet inserted.
    let values: unknown[] = [];
    // A message's acknowledgement is chained by its first claim only, whoever chains it again.
    const receipts = batch.map(receiptKeyOf);
    const claimed = this.#claims.claim(receipts.filter((k) => k !== undefined));
    for (let i = 0; i < batch.length; i++) {
      const e = batch[i]!;
      const receipt = receipts[i];
      if (receipt !== undefined && !claimed.take(receipt)) continue;
      const head = heads.get(e.tenant) ??
        this.#head.get(e.tenant) ??
        this.#lastEntry.get(e.tenant) ?? { seq: 0, hash: GENESIS_HASH };
      const entry = chainEntry(e, head);
      values.push(
        entry.tenant,
        entry.seq,
        entry.eventType,
        entry.createdAt,
        entry.correlationId,
        entry.payload,
        entry.prevHash,
        entry.hash,
      );
      if (values.length === INSERT_CHUNK * 8) {
        this.#insertChunk.run(values);
        values = [];
      }
      out.push(entry);
      heads.set(e.tenant, entry);
    }
    for (let i = 0; i < values.length; i += 8) this.#insert.run(values.slice(i, i + 8));
    for (const [tenant, head] of heads) this.#setHead.run(tenant, head.seq, head.hash);
    return out;
  }
}

/**
 * The message a `queue.message.enqueued` entry stands for (tenant, flow, id), to be claimed before
 * it is chained (receipt-claims.ts); undefined for any other entry, and for one that names no
 * message, which is chained as it is.
 */
function receiptKeyOf(e: PreparedAuditEntry): ReceiptKey | undefined {
  if (e.eventType !== RECEIPT_EVENT) return undefined;
  let flow: unknown;
  let id: unknown;
  try {
    ({ flow, id } = JSON.parse(e.payload) as { flow?: unknown; id?: unknown });
  } catch {
    return undefined;
  }
  if (typeof flow !== 'string' || !Number.isSafeInteger(id)) return undefined;
  return { tenant: e.tenant, flow, id: id as number };
}

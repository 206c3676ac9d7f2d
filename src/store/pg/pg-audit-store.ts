/**
 * The audit trail in the PostgreSQL store: the same per-tenant hash chains as store/sqlite/sqlite-audit-store.ts (hashing and chain check in store/contracts/audit.ts),
 * hashed and verified by that module's code, so a chain is byte for byte what SQLite would hold.
 *
 * An append locks the heads of its tenants (audit_heads rows, made when missing) for the rest of
 * its transaction, chains the batch from them, inserts the entries and moves the heads: nodes
 * appending to one tenant at once queue on that row and still build one chain.
 */
import type { PgDb, PgTx } from './pg-db.js';
import {
  AUDIT_COLUMNS,
  AUDIT_VERIFY_PAGE,
  AuditChainCheck,
  auditEntryFromRow,
  chainEntry,
  GENESIS_HASH,
  prepareAuditEntry,
  type AuditEntry,
  type AuditEntryInput,
  type AuditHead,
  type AuditPageQuery,
  type AuditRow,
  type AuditSnapshot,
  type AuditStore,
  type AuditVerifyResult,
  type PreparedAuditEntry,
} from '../contracts/index.js';

export class PgAuditStore implements AuditStore {
  constructor(private readonly db: PgDb) {}

  async append(input: AuditEntryInput): Promise<AuditEntry> {
    return (await this.appendPrepared([prepareAuditEntry(input)]))[0]!;
  }

  async appendMany(entries: readonly AuditEntryInput[]): Promise<AuditEntry[]> {
    return this.appendPrepared(entries.map((e) => prepareAuditEntry(e)));
  }

  async appendPrepared(entries: readonly PreparedAuditEntry[]): Promise<AuditEntry[]> {
    if (entries.length === 0) return [];
    return this.db.transaction((tx) => appendAuditIn(tx, entries));
  }

  async latest(tenant: string, limit: number): Promise<AuditEntry[]> {
    const r = await this.db.query<AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE tenant = $1 ORDER BY seq DESC LIMIT $2`,
      [tenant, limit],
    );
    return r.rows.map(auditEntryFromRow).reverse();
  }

  async page(tenant: string, q: AuditPageQuery): Promise<AuditEntry[]> {
    const where = ['tenant = $1'];
    const args: unknown[] = [tenant];
    const add = (sql: (n: string) => string, value: unknown) => {
      args.push(value);
      where.push(sql(`$${args.length}`));
    };
    if (q.beforeSeq !== undefined) add((n) => `seq < ${n}`, q.beforeSeq);
    if (q.eventType !== undefined) add((n) => `event_type = ${n}`, q.eventType);
    // Payloads are JSON text as JSON.stringify wrote them; ->> answers null for one that is not an object.
    if (q.actor !== undefined) add((n) => `payload::jsonb ->> 'actor' = ${n}`, q.actor);
    args.push(q.limit);
    const r = await this.db.query<AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${args.length}`,
      args,
    );
    return r.rows.map(auditEntryFromRow);
  }

  async eventTypes(tenant: string): Promise<string[]> {
    const r = await this.db.query<{ event_type: string }>(
      // Sorted by code point, as SQLite sorts (the database's collation may order "." and "_" otherwise).
      'SELECT DISTINCT event_type COLLATE "C" AS event_type FROM audit_entries WHERE tenant = $1 ORDER BY 1',
      [tenant],
    );
    return r.rows.map((row) => row.event_type);
  }

  async entriesOfTypes(
    tenant: string,
    types: readonly string[],
    afterSeq: number,
    limit: number,
  ): Promise<AuditEntry[]> {
    const r = await this.db.query<AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE tenant = $1 AND seq > $2 AND event_type = ANY($3::text[]) ORDER BY seq LIMIT $4`,
      [tenant, afterSeq, types, limit],
    );
    return r.rows.map(auditEntryFromRow);
  }

  async count(tenant: string): Promise<number> {
    return (await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM audit_entries WHERE tenant = $1', [tenant]))
      .rows[0]!.n;
  }

  /**
   * As SqliteAuditStore.verify: the head and the highest seq from one statement's snapshot, then the rows
   * up to them page by page (one page in memory at a time), each through the shared check.
   */
  async verify(tenant: string): Promise<AuditVerifyResult> {
    const snap = await this.db.query<AuditSnapshot>(
      `SELECT (SELECT seq FROM audit_heads WHERE tenant = $1) AS head_seq, (SELECT hash FROM audit_heads WHERE tenant = $1) AS head_hash,
              (SELECT MAX(seq) FROM audit_entries WHERE tenant = $1) AS max_seq`,
      [tenant],
    );
    const check = new AuditChainCheck(tenant, snap.rows[0]!);
    if (check.empty) return check.finish();
    let rows: AuditRow[];
    do {
      rows = (
        await this.db.query<AuditRow>(
          `SELECT ${AUDIT_COLUMNS} FROM audit_entries WHERE tenant = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
          [tenant, check.after, check.upTo, AUDIT_VERIFY_PAGE],
        )
      ).rows;
      for (const row of rows) {
        const broken = check.row(row);
        if (broken !== undefined) return broken;
      }
    } while (rows.length === AUDIT_VERIFY_PAGE);
    return check.finish();
  }
}

/**
 * Appends prepared entries (prepareAuditEntry) inside the caller's transaction, so a state change
 * and its audit entry commit or roll back together. Call it last in that transaction: from here to
 * COMMIT every other append of these tenants waits on their head rows, and taking them last keeps
 * one lock order everywhere (the state's rows, then the audit heads).
 */
export async function appendAuditIn(tx: PgTx, entries: readonly PreparedAuditEntry[]): Promise<AuditEntry[]> {
  if (entries.length === 0) return [];
  return appendLockedAuditIn(tx, entries, await lockHeads(tx, [...new Set(entries.map((e) => e.tenant))]));
}

/**
 * appendAuditIn for a caller that already locked the heads of every tenant of `entries` in this
 * transaction (with lockHeadsSql, in a statement of its own: the queue appender's), so the lock
 * costs no round trip of its own. `heads` is taken over (moved to the last entry of each tenant).
 */
export async function appendLockedAuditIn(
  tx: PgTx,
  entries: readonly PreparedAuditEntry[],
  heads: Map<string, AuditHead>,
): Promise<AuditEntry[]> {
  if (entries.length === 0) return [];
  const out = entries.map((e) => {
    const head = heads.get(e.tenant);
    if (head === undefined) throw new Error(`audit head of tenant ${e.tenant} not locked before its entries`);
    const entry = chainEntry(e, head);
    heads.set(e.tenant, entry);
    return entry;
  });
  const col = <K extends keyof AuditEntry>(k: K) => out.map((e) => e[k]);
  // One statement for every row (arrays, so the batch size meets no parameter limit) and the heads.
  await tx.query(
    `WITH rows AS (
       INSERT INTO audit_entries (${AUDIT_COLUMNS})
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
     )
     UPDATE audit_heads h SET seq = n.seq, hash = n.hash FROM unnest($9::text[], $10::bigint[], $11::text[]) AS n(tenant, seq, hash) WHERE h.tenant = n.tenant`,
    [
      col('tenant'),
      col('seq'),
      col('eventType'),
      col('createdAt'),
      col('correlationId'),
      col('payload'),
      col('prevHash'),
      col('hash'),
      [...heads.keys()],
      [...heads.values()].map((h) => h.seq),
      [...heads.values()].map((h) => h.hash),
    ],
  );
  return out;
}

/**
 * Locks the head row of each tenant until the transaction ends and answers the heads. One
 * statement: a missing row is made (from the chain's last entry, as SqliteAuditStore reads a chain whose
 * head record is gone, or genesis), an existing one is updated to itself, which locks it and
 * answers its newest committed values. Tenants are taken in byte order, so two batches over the
 * same tenants lock them in one order and cannot deadlock.
 */
async function lockHeads(tx: PgTx, tenants: readonly string[]): Promise<Map<string, AuditHead>> {
  const r = await tx.query<AuditHead & { tenant: string }>(lockHeadsSql('$1', '$2'), [tenants, GENESIS_HASH]);
  return new Map(r.rows.map((h) => [h.tenant, { seq: h.seq, hash: h.hash }]));
}

/**
 * The INSERT that locks (and makes, when missing) the heads of the tenants in the text array
 * `tenantsParam` and answers `tenant, seq, hash` per tenant; `genesisParam` holds GENESIS_HASH.
 * With `after` (a CTE of the caller's statement), the heads are locked only once that CTE's row
 * is made: a statement that locks another row first keeps that lock order (the queue appender).
 */
export function lockHeadsSql(tenantsParam: string, genesisParam: string, after?: string): string {
  return `INSERT INTO audit_heads (tenant, seq, hash)
     SELECT t.tenant, COALESCE(last.seq, 0), COALESCE(last.hash, ${genesisParam})
       FROM ${after === undefined ? '' : `${after}, `}unnest(${tenantsParam}::text[]) AS t(tenant)
       LEFT JOIN LATERAL (SELECT seq, hash FROM audit_entries e WHERE e.tenant = t.tenant ORDER BY seq DESC LIMIT 1) last ON true
      ORDER BY t.tenant COLLATE "C"
     ON CONFLICT (tenant) DO UPDATE SET seq = audit_heads.seq
     RETURNING tenant, seq, hash`;
}

/**
 * Schema of the audit database (`audit.db`): one hash chain per tenant, each chain's head, the
 * writers' spool marks, and the messages whose acknowledgement is chained (as runs of ids).
 */
import type { Migration } from '../db.js';

export const auditMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
      CREATE TABLE audit_entries (
        tenant TEXT NOT NULL,
        seq INTEGER NOT NULL,                -- 1, 2, 3 ... per tenant
        event_type TEXT NOT NULL,
        created_at TEXT NOT NULL,            -- ISO 8601 UTC
        correlation_id TEXT NOT NULL,
        payload TEXT NOT NULL,               -- JSON text, hashed exactly as stored
        prev_hash TEXT NOT NULL,             -- hash of seq - 1; 64 zeros for seq 1
        hash TEXT NOT NULL,                  -- hex SHA-256 of the canonical encoding (store/contracts/audit.ts)
        PRIMARY KEY (tenant, seq)
      ) WITHOUT ROWID;
      -- The last appended entry of each chain, written in the same transaction as the entry, so a
      -- chain cut short at its end (the one deletion seq continuity cannot show) is still detected.
      CREATE TABLE audit_heads (
        tenant TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: 'audit spool marks',
    sql: `
      -- Per spool file of a server's audit writer (store/audit/audit-spool.ts): the sequence number
      -- of the last entry of it chained, committed in the same transaction as the entries, so the
      -- entries a dead process left spooled are chained once, and only those.
      CREATE TABLE audit_spool_marks (
        spool TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: 'audit receipts',
    sql: `
      -- One row per queued message whose queue.message.enqueued entry is chained, inserted in the
      -- entry's own transaction. A file queue's record carries what its entry says (the outbox:
      -- queue-format.md), so a reader that cannot tell whether the appending process lived to chain
      -- it chains it again; the row makes every chaining after the first a no-op.
      CREATE TABLE audit_receipts (
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        id INTEGER NOT NULL,
        PRIMARY KEY (tenant, flow, id)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    name: 'audit receipt runs',
    sql: `
      -- The same claims as runs of consecutive ids per queue (store/sqlite/receipt-claims.ts): a
      -- server's writer claims a batch's receipts, their ids consecutive, with three statements
      -- instead of one INSERT each. Runs never overlap; the rows of audit_receipts become runs.
      CREATE TABLE audit_receipt_runs (
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        first_id INTEGER NOT NULL,
        last_id INTEGER NOT NULL,
        PRIMARY KEY (tenant, flow, first_id)
      ) WITHOUT ROWID;
      INSERT INTO audit_receipt_runs (tenant, flow, first_id, last_id)
        SELECT tenant, flow, MIN(id), MAX(id)
        FROM (SELECT tenant, flow, id, id - ROW_NUMBER() OVER (PARTITION BY tenant, flow ORDER BY id) AS island
              FROM audit_receipts)
        GROUP BY tenant, flow, island;
      DROP TABLE audit_receipts;
    `,
  },
];

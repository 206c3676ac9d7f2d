/**
 * Flow state in the PostgreSQL store: deduplication (`flow_inbox`) and correlation
 * (`flow_correlations`), answering as store/sqlite/sqlite-flow-state-store.ts does. Every check-then-write is one
 * conditional statement, so nodes sharing the store agree on who claimed, closed or timed out a row;
 * every failure is StorageUnavailableError ("state unavailable", 503), as on SQLite.
 */
import type { PgTx } from './pg-db.js';
import {
  claimable,
  stateFilterSql,
  stateUnavailable,
  type ClaimOutcome,
  type ClaimRequest,
  type CorrelationRow,
  type CorrelationStatus,
  type FinishRequest,
  type FlowStateStore,
  type InboxRow,
  type StateFilter,
  type ReclaimOptions,
  type ReclaimResult,
} from '../contracts/index.js';

/**
 * How often a claim or close looks again when the row it lost to changed before it could be read
 * (purged, released, reopened in between). Each retry needs another node's write in that instant.
 */
const RACE_RETRIES = 20;

const KEY = 'tenant = $1 AND flow = $2 AND key_hash = $3';

export class PgFlowStateStore implements FlowStateStore {
  constructor(private readonly db: PgTx) {}

  async claim(c: ClaimRequest): Promise<ClaimOutcome> {
    return this.#safe(async () => {
      for (let attempt = 0; attempt < RACE_RETRIES; attempt += 1) {
        // The insert, or the take-over of a claimable row, in one statement: a concurrent claimer
        // waits on the row's lock and then sees this claim's in_flight row, which it cannot take.
        const won = await this.db.query(
          `INSERT INTO flow_inbox (tenant, flow, key_hash, status, claimed_at, expires_at, lease_expires_at, first_correlation_id)
           VALUES ($1, $2, $3, 'in_flight', $4, $5, $6, $7)
           ON CONFLICT (tenant, flow, key_hash) DO UPDATE SET status = 'in_flight', claimed_at = excluded.claimed_at,
             expires_at = excluded.expires_at, lease_expires_at = excluded.lease_expires_at,
             first_correlation_id = excluded.first_correlation_id, response_status = NULL, response_headers = NULL,
             response_body = NULL, finished_at = NULL
           WHERE flow_inbox.expires_at <= $4
              OR (flow_inbox.status = 'in_flight' AND (flow_inbox.lease_expires_at IS NULL OR flow_inbox.lease_expires_at <= $4))
              OR (flow_inbox.status = 'failed' AND $8)`,
          [c.tenant, c.flow, c.keyHash, c.now, c.expiresAt, c.leaseExpiresAt, c.correlationId, c.reclaimFailed],
        );
        if (won.rowCount === 1) return { claimed: true };
        // Lost to a row in force. The answer is that row as read now, if it still holds the key.
        const row = await this.getInbox(c.tenant, c.flow, c.keyHash);
        if (row !== undefined && !claimable(row, c.now, c.reclaimFailed)) return { claimed: false, row };
      }
      throw new Error(`the claim of a key of ${c.tenant}/${c.flow} kept losing races`);
    });
  }

  async finish(tenant: string, flow: string, keyHash: string, correlationId: string, o: FinishRequest): Promise<void> {
    await this.#safe(() =>
      this.db.query(
        `UPDATE flow_inbox SET status = $5, response_status = $6, response_headers = $7, response_body = $8, finished_at = $9, lease_expires_at = NULL
         WHERE ${KEY} AND first_correlation_id = $4 AND status = 'in_flight'`,
        [tenant, flow, keyHash, correlationId, o.status, o.responseStatus, JSON.stringify(o.headers), o.body, o.now],
      ),
    );
  }

  async getInbox(tenant: string, flow: string, keyHash: string): Promise<InboxRow | undefined> {
    return this.#safe(
      async () =>
        (await this.db.query<InboxRow>(`SELECT * FROM flow_inbox WHERE ${KEY}`, [tenant, flow, keyHash])).rows[0],
    );
  }

  async release(tenant: string, flow: string, keyHash: string): Promise<InboxRow | undefined> {
    // The row as it was: locked, then cleared in the same statement (the lock makes `before` the
    // version the update changes, not an older snapshot's).
    return this.#safe(async () => {
      const r = await this.db.query<InboxRow>(
        `WITH before AS MATERIALIZED (SELECT * FROM flow_inbox WHERE ${KEY} FOR UPDATE),
              cleared AS (UPDATE flow_inbox f SET lease_expires_at = NULL FROM before b
                           WHERE f.tenant = b.tenant AND f.flow = b.flow AND f.key_hash = b.key_hash AND b.status = 'in_flight')
         SELECT * FROM before`,
        [tenant, flow, keyHash],
      );
      return r.rows[0];
    });
  }

  async listInbox(f: StateFilter): Promise<InboxRow[]> {
    return this.#list<InboxRow>('flow_inbox', 'claimed_at', f);
  }

  async purgeInbox(now: string): Promise<number> {
    return this.#safe(async () => {
      const r = await this.db.query(
        `DELETE FROM flow_inbox WHERE expires_at <= $1
         AND (status <> 'in_flight' OR lease_expires_at IS NULL OR lease_expires_at <= $1)`,
        [now],
      );
      return r.rowCount ?? 0;
    });
  }

  async openCorrelation(r: Omit<CorrelationRow, 'status' | 'closed_at'>): Promise<CorrelationRow | undefined> {
    return this.#safe(async () => {
      for (let attempt = 0; attempt < RACE_RETRIES; attempt += 1) {
        const made = await this.db.query(
          `INSERT INTO flow_correlations (tenant, flow, key_hash, step, status, opened_at, deadline, on_timeout_flow, correlation_id, state)
           VALUES ($1, $2, $3, $4, 'open', $5, $6, $7, $8, $9) ON CONFLICT (tenant, flow, key_hash) DO NOTHING`,
          [r.tenant, r.flow, r.key_hash, r.step, r.opened_at, r.deadline, r.on_timeout_flow, r.correlation_id, r.state],
        );
        if (made.rowCount === 1) return undefined;
        // Taken: the row that holds the key, unless it was withdrawn or purged since.
        const existing = await this.getCorrelation(r.tenant, r.flow, r.key_hash);
        if (existing !== undefined) return existing;
      }
      throw new Error(`the correlation of a key of ${r.tenant}/${r.flow} kept losing races`);
    });
  }

  async withdrawCorrelation(tenant: string, flow: string, keyHash: string, correlationId: string): Promise<void> {
    await this.#safe(() =>
      this.db.query(`DELETE FROM flow_correlations WHERE ${KEY} AND correlation_id = $4 AND status = 'open'`, [
        tenant,
        flow,
        keyHash,
        correlationId,
      ]),
    );
  }

  async getCorrelation(tenant: string, flow: string, keyHash: string): Promise<CorrelationRow | undefined> {
    return this.#safe(
      async () =>
        (await this.db.query<CorrelationRow>(`SELECT * FROM flow_correlations WHERE ${KEY}`, [tenant, flow, keyHash]))
          .rows[0],
    );
  }

  async closeCorrelation(
    tenant: string,
    flow: string,
    keyHash: string,
    now: string,
  ): Promise<CorrelationStatus | undefined> {
    return this.#safe(async () => {
      for (let attempt = 0; attempt < RACE_RETRIES; attempt += 1) {
        // The new status names the old one (closed: was open; closed_late: was timed_out), and the
        // row lock orders this against markTimedOut: whichever runs second sees the other's status.
        const closed = await this.db.query<{ status: CorrelationStatus }>(
          `UPDATE flow_correlations SET status = CASE status WHEN 'open' THEN 'closed' ELSE 'closed_late' END, closed_at = $4
           WHERE ${KEY} AND status IN ('open', 'timed_out') RETURNING status`,
          [tenant, flow, keyHash, now],
        );
        const after = closed.rows[0]?.status;
        if (after !== undefined) return after === 'closed' ? 'open' : 'timed_out';
        // Nothing to close: already closed, or no row; unless one was opened in between.
        const row = await this.getCorrelation(tenant, flow, keyHash);
        if (row === undefined || row.status === 'closed' || row.status === 'closed_late') return row?.status;
      }
      throw new Error(`the close of a correlation of ${tenant}/${flow} kept losing races`);
    });
  }

  async dueCorrelations(now: string, limit = 500): Promise<CorrelationRow[]> {
    return this.#safe(
      async () =>
        (
          await this.db.query<CorrelationRow>(
            "SELECT * FROM flow_correlations WHERE status = 'open' AND deadline <= $1 ORDER BY deadline LIMIT $2",
            [now, limit],
          )
        ).rows,
    );
  }

  async markTimedOut(tenant: string, flow: string, keyHash: string): Promise<boolean> {
    return this.#safe(
      async () =>
        (
          await this.db.query(`UPDATE flow_correlations SET status = 'timed_out' WHERE ${KEY} AND status = 'open'`, [
            tenant,
            flow,
            keyHash,
          ])
        ).rowCount === 1,
    );
  }

  async purgeCorrelations(cutoff: string): Promise<number> {
    return this.#safe(
      async () =>
        (await this.db.query("DELETE FROM flow_correlations WHERE status <> 'open' AND deadline < $1", [cutoff]))
          .rowCount ?? 0,
    );
  }

  /** Nothing to give back: PostgreSQL's autovacuum reclaims the space of deleted rows itself. */
  async reclaimFreePages(_opts: ReclaimOptions): Promise<ReclaimResult> {
    return { pagesFreed: 0, slices: 0, longestSliceMs: 0, stopped: false };
  }

  async listCorrelations(f: StateFilter): Promise<CorrelationRow[]> {
    return this.#list<CorrelationRow>('flow_correlations', 'opened_at', f);
  }

  async #list<R extends InboxRow | CorrelationRow>(
    table: 'flow_inbox' | 'flow_correlations',
    order: 'claimed_at' | 'opened_at',
    f: StateFilter,
  ): Promise<R[]> {
    const q = stateFilterSql(f, (n) => `$${n}`);
    if (q === undefined) return [];
    // The instants collate as "C" (0001_initial.sql), so this is SQLite's byte order.
    return this.#safe(
      async () =>
        (await this.db.query<R>(`SELECT * FROM ${table} ${q.where} ORDER BY ${order} DESC LIMIT ${q.limit}`, q.args))
          .rows,
    );
  }

  async #safe<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw stateUnavailable(err);
    }
  }
}

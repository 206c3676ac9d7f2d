/**
 * Flow state rows in the registry database: deduplication (`flow_inbox`) and correlation
 * (`flow_correlations`). Business keys arrive here only as fingerprints. Every SQLite failure is
 * turned into StorageUnavailableError (the spec's "state unavailable", 503).
 */
import { StorageUnavailableError } from '../../common/errors.js';
import type { Statement } from 'better-sqlite3';
import { reclaimFreePagesInSlices, type ReclaimOptions, type ReclaimResult } from './auto-vacuum.js';
import type { Db } from './db.js';
import {
  type CorrelationStatus,
  type InboxRow,
  type CorrelationRow,
  type ClaimRequest,
  type ClaimOutcome,
  type StateFilter,
  type FlowStateStore,
  type FinishRequest,
  stateUnavailable,
  stateFilterSql,
  claimable,
} from '../contracts/index.js';

export class SqliteFlowStateStore implements FlowStateStore {
  readonly #db: Db;
  /** Statements by SQL text, prepared on first use: claim and finish run on every deduplicated delivery. */
  readonly #statements = new Map<string, Statement>();

  constructor(db: Db) {
    this.#db = db;
  }

  #sql(sql: string): Statement {
    let stmt = this.#statements.get(sql);
    if (stmt === undefined) this.#statements.set(sql, (stmt = this.#db.prepare(sql)));
    return stmt;
  }

  /** Claims a key atomically: a new key, an expired window, an expired or released lease, or (when asked) a failed row. */
  claim(c: ClaimRequest): ClaimOutcome {
    return this.#safe(() =>
      this.#db
        .transaction((): ClaimOutcome => {
          const row = this.getInbox(c.tenant, c.flow, c.keyHash);
          if (row !== undefined && !claimable(row, c.now, c.reclaimFailed)) return { claimed: false, row };
          this.#sql(
            `INSERT INTO flow_inbox (tenant, flow, key_hash, status, claimed_at, expires_at, lease_expires_at, first_correlation_id)
               VALUES (?, ?, ?, 'in_flight', ?, ?, ?, ?)
               ON CONFLICT (tenant, flow, key_hash) DO UPDATE SET status = 'in_flight', claimed_at = excluded.claimed_at,
                 expires_at = excluded.expires_at, lease_expires_at = excluded.lease_expires_at,
                 first_correlation_id = excluded.first_correlation_id, response_status = NULL, response_headers = NULL,
                 response_body = NULL, finished_at = NULL`,
          ).run(c.tenant, c.flow, c.keyHash, c.now, c.expiresAt, c.leaseExpiresAt, c.correlationId);
          return { claimed: true };
        })
        .immediate(),
    );
  }

  /** Records the outcome of the claimed run (only while the row is still this claim's). */
  finish(tenant: string, flow: string, keyHash: string, correlationId: string, o: FinishRequest): void {
    this.#safe(() =>
      this.#sql(
        `UPDATE flow_inbox SET status = ?, response_status = ?, response_headers = ?, response_body = ?, finished_at = ?, lease_expires_at = NULL
           WHERE tenant = ? AND flow = ? AND key_hash = ? AND first_correlation_id = ? AND status = 'in_flight'`,
      ).run(o.status, o.responseStatus, JSON.stringify(o.headers), o.body, o.now, tenant, flow, keyHash, correlationId),
    );
  }

  getInbox(tenant: string, flow: string, keyHash: string): InboxRow | undefined {
    return this.#safe(
      () =>
        this.#sql('SELECT * FROM flow_inbox WHERE tenant = ? AND flow = ? AND key_hash = ?').get(
          tenant,
          flow,
          keyHash,
        ) as InboxRow | undefined,
    );
  }

  /** Clears the lease of an in_flight row so the next delivery may run; returns the row as it was, or undefined. */
  release(tenant: string, flow: string, keyHash: string): InboxRow | undefined {
    return this.#safe(() =>
      this.#db
        .transaction(() => {
          const row = this.getInbox(tenant, flow, keyHash);
          if (row?.status !== 'in_flight') return row;
          this.#sql(
            "UPDATE flow_inbox SET lease_expires_at = NULL WHERE tenant = ? AND flow = ? AND key_hash = ? AND status = 'in_flight'",
          ).run(tenant, flow, keyHash);
          return row;
        })
        .immediate(),
    );
  }

  listInbox(f: StateFilter): InboxRow[] {
    return this.#list('flow_inbox', 'claimed_at', f) as InboxRow[];
  }

  /** Deletes deduplication rows past their own `expires_at` (an in_flight row only once its lease is gone too). */
  purgeInbox(now: string): number {
    return this.#safe(
      () =>
        this.#sql(
          `DELETE FROM flow_inbox WHERE expires_at <= ?
             AND (status <> 'in_flight' OR lease_expires_at IS NULL OR lease_expires_at <= ?)`,
        ).run(now, now).changes,
    );
  }

  /** Inserts an open row unless any row exists for the key; then returns that row instead. */
  openCorrelation(r: Omit<CorrelationRow, 'status' | 'closed_at'>): CorrelationRow | undefined {
    return this.#safe(() =>
      this.#db
        .transaction(() => {
          const existing = this.getCorrelation(r.tenant, r.flow, r.key_hash);
          if (existing !== undefined) return existing;
          this.#sql(
            `INSERT INTO flow_correlations (tenant, flow, key_hash, step, status, opened_at, deadline, on_timeout_flow, correlation_id, state)
               VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?)`,
          ).run(
            r.tenant,
            r.flow,
            r.key_hash,
            r.step,
            r.opened_at,
            r.deadline,
            r.on_timeout_flow,
            r.correlation_id,
            r.state,
          );
          return undefined;
        })
        .immediate(),
    );
  }

  /** Withdraws a row this delivery opened (its flow failed, so the correlation never started). */
  withdrawCorrelation(tenant: string, flow: string, keyHash: string, correlationId: string): void {
    this.#safe(() =>
      this.#sql(
        "DELETE FROM flow_correlations WHERE tenant = ? AND flow = ? AND key_hash = ? AND correlation_id = ? AND status = 'open'",
      ).run(tenant, flow, keyHash, correlationId),
    );
  }

  getCorrelation(tenant: string, flow: string, keyHash: string): CorrelationRow | undefined {
    return this.#safe(
      () =>
        this.#sql('SELECT * FROM flow_correlations WHERE tenant = ? AND flow = ? AND key_hash = ?').get(
          tenant,
          flow,
          keyHash,
        ) as CorrelationRow | undefined,
    );
  }

  /** open -> closed, timed_out -> closed_late; returns the status before, or undefined when no row exists. */
  closeCorrelation(tenant: string, flow: string, keyHash: string, now: string): CorrelationStatus | undefined {
    return this.#safe(() =>
      this.#db
        .transaction(() => {
          const row = this.getCorrelation(tenant, flow, keyHash);
          if (row === undefined) return undefined;
          const next = row.status === 'open' ? 'closed' : row.status === 'timed_out' ? 'closed_late' : undefined;
          if (next !== undefined) {
            this.#sql(
              'UPDATE flow_correlations SET status = ?, closed_at = ? WHERE tenant = ? AND flow = ? AND key_hash = ?',
            ).run(next, now, tenant, flow, keyHash);
          }
          return row.status;
        })
        .immediate(),
    );
  }

  /** Open rows whose deadline has passed, oldest deadline first. */
  dueCorrelations(now: string, limit = 500): CorrelationRow[] {
    return this.#safe(
      () =>
        this.#sql(
          "SELECT * FROM flow_correlations WHERE status = 'open' AND deadline <= ? ORDER BY deadline LIMIT ?",
        ).all(now, limit) as CorrelationRow[],
    );
  }

  /** open -> timed_out; false when another process (or a close) got there first. */
  markTimedOut(tenant: string, flow: string, keyHash: string): boolean {
    return this.#safe(
      () =>
        this.#sql(
          "UPDATE flow_correlations SET status = 'timed_out' WHERE tenant = ? AND flow = ? AND key_hash = ? AND status = 'open'",
        ).run(tenant, flow, keyHash).changes === 1,
    );
  }

  /** Deletes finished rows (not open) whose deadline is before `cutoff`. */
  purgeCorrelations(cutoff: string): number {
    return this.#safe(
      () => this.#sql("DELETE FROM flow_correlations WHERE status <> 'open' AND deadline < ?").run(cutoff).changes,
    );
  }

  /**
   * Gives the registry's free pages (left by the purges) back to the file system in short slices
   * (see auto-vacuum.ts). The registry is shared by every table in it, so this also returns the
   * pages of any other delete.
   */
  async reclaimFreePages(opts: ReclaimOptions): Promise<ReclaimResult> {
    try {
      return await reclaimFreePagesInSlices(this.#db, opts);
    } catch (err) {
      throw new StorageUnavailableError('state unavailable: the flow state store could not be written', err);
    }
  }

  listCorrelations(f: StateFilter): CorrelationRow[] {
    return this.#list('flow_correlations', 'opened_at', f) as CorrelationRow[];
  }

  #list(table: 'flow_inbox' | 'flow_correlations', order: string, f: StateFilter): unknown[] {
    const q = stateFilterSql(f, () => '?');
    if (q === undefined) return [];
    const sql = `SELECT * FROM ${table} ${q.where} ORDER BY ${order} DESC LIMIT ${q.limit}`;
    return this.#safe(() => this.#db.prepare(sql).all(...q.args));
  }

  #safe<T>(work: () => T): T {
    try {
      return work();
    } catch (err) {
      throw stateUnavailable(err);
    }
  }
}

/**
 * Flow state rows in the registry database: deduplication (`flow_inbox`) and correlation
 * (`flow_correlations`). Business keys arrive here only as fingerprints. Every SQLite failure is
 * turned into StorageUnavailableError (the spec's "state unavailable", 503).
 */
import type { Awaitable } from '../../common/awaitable.js';
import { StorageUnavailableError } from '../../common/errors.js';
import type { Statement } from 'better-sqlite3';
import { reclaimFreePagesInSlices, type ReclaimOptions, type ReclaimResult } from './auto-vacuum.js';
import type { Db } from './db.js';

export type InboxStatus = 'in_flight' | 'done' | 'failed';
export type CorrelationStatus = 'open' | 'timed_out' | 'closed' | 'closed_late';

export interface InboxRow {
  tenant: string;
  flow: string;
  key_hash: string;
  status: InboxStatus;
  claimed_at: string;
  /** ISO 8601 UTC, fixed at claim time from the window. */
  expires_at: string;
  /** In-flight lease end; null once released by `svc state release`. */
  lease_expires_at: string | null;
  first_correlation_id: string;
  response_status: number | null;
  /** JSON object of the replayed headers. */
  response_headers: string | null;
  /** JSON-encoded output (dedup_memoize_response only). */
  response_body: string | null;
  finished_at: string | null;
}

export interface CorrelationRow {
  tenant: string;
  flow: string;
  key_hash: string;
  step: string;
  status: CorrelationStatus;
  opened_at: string;
  deadline: string;
  on_timeout_flow: string | null;
  correlation_id: string;
  /** JSON of correlation_state; never shown by any command. */
  state: string | null;
  closed_at: string | null;
}

export interface ClaimRequest {
  tenant: string;
  flow: string;
  keyHash: string;
  correlationId: string;
  now: string;
  expiresAt: string;
  leaseExpiresAt: string;
  /** A `failed` row is claimed again (dedup_on_failure other than absorb). */
  reclaimFailed: boolean;
}

/** `claimed`: the caller runs the flow; otherwise the existing row decides the answer. */
export type ClaimOutcome = { claimed: true } | { claimed: false; row: InboxRow };

export interface StateFilter {
  tenant?: string;
  flow?: string;
  statuses?: readonly string[];
  /** @default 50 */
  limit?: number;
}

/**
 * The storage contract (store/contracts.ts): implemented here and in store/pg/. Every failure of
 * the store is StorageUnavailableError. Instants are ISO 8601 UTC text and compare as text.
 */
export interface FlowStateStore {
  /**
   * Claims a key atomically: exactly one caller gets `{ claimed: true }` for a (tenant, flow, key)
   * while its row is in force. A new key, an expired window, an expired or released lease, or
   * (with `reclaimFailed`) a failed row is claimed again, as a fresh in_flight row.
   */
  claim(c: ClaimRequest): Awaitable<ClaimOutcome>;
  /** Records the outcome of the claimed run, only while the row is still this claim's and in_flight. */
  finish(tenant: string, flow: string, keyHash: string, correlationId: string, o: FinishRequest): Awaitable<void>;
  getInbox(tenant: string, flow: string, keyHash: string): Awaitable<InboxRow | undefined>;
  /** Clears the lease of an in_flight row so the next delivery may run; returns the row as it was, or undefined. */
  release(tenant: string, flow: string, keyHash: string): Awaitable<InboxRow | undefined>;
  /** Newest claim first. */
  listInbox(f: StateFilter): Awaitable<InboxRow[]>;
  /** Deletes rows past their own `expires_at` (an in_flight row only once its lease is gone too); returns how many. */
  purgeInbox(now: string): Awaitable<number>;
  /** Inserts an open row unless any row exists for the key; then returns that row instead (undefined: opened). */
  openCorrelation(r: Omit<CorrelationRow, 'status' | 'closed_at'>): Awaitable<CorrelationRow | undefined>;
  /** Deletes the open row this delivery opened (its flow failed, so the correlation never started). */
  withdrawCorrelation(tenant: string, flow: string, keyHash: string, correlationId: string): Awaitable<void>;
  getCorrelation(tenant: string, flow: string, keyHash: string): Awaitable<CorrelationRow | undefined>;
  /**
   * open -> closed, timed_out -> closed_late (the status decides, not the clock: an open row past
   * its deadline that no reconcile pass has timed out yet closes as `closed`); returns the status
   * before, or undefined when no row exists.
   */
  closeCorrelation(
    tenant: string,
    flow: string,
    keyHash: string,
    now: string,
  ): Awaitable<CorrelationStatus | undefined>;
  /** Open rows whose deadline has passed, oldest deadline first. @default limit 500 */
  dueCorrelations(now: string, limit?: number): Awaitable<CorrelationRow[]>;
  /** open -> timed_out; false when another process (or a close) got there first. */
  markTimedOut(tenant: string, flow: string, keyHash: string): Awaitable<boolean>;
  /** Deletes finished rows (not open) whose deadline is before `cutoff`; returns how many. */
  purgeCorrelations(cutoff: string): Awaitable<number>;
  /** Newest opening first. */
  listCorrelations(f: StateFilter): Awaitable<CorrelationRow[]>;
  /**
   * Gives the space the purges freed back to the file system, in slices paced by `opts.between`
   * (housekeeping's step after the purges). PostgreSQL's autovacuum reclaims its own space: there
   * it gives nothing back and says so (0 pages).
   */
  reclaimFreePages(opts: ReclaimOptions): Promise<ReclaimResult>;
}

/** The outcome `finish` records. */
export interface FinishRequest {
  status: 'done' | 'failed';
  responseStatus: number;
  headers: Record<string, string>;
  body: string | null;
  now: string;
}

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

/** What every failure of a flow state store becomes: the spec's "state unavailable" (503). */
export function stateUnavailable(err: unknown): StorageUnavailableError {
  if (err instanceof StorageUnavailableError) return err;
  return new StorageUnavailableError('state unavailable: the flow state store could not be read or written', err);
}

/**
 * The WHERE clause, its arguments and the row limit of a listing, `param(n)` writing the n-th
 * placeholder (from 1); undefined when no status is selected, so nothing matches.
 */
export function stateFilterSql(
  f: StateFilter,
  param: (n: number) => string,
): { where: string; args: unknown[]; limit: number } | undefined {
  const where: string[] = [];
  const args: unknown[] = [];
  const next = (v: unknown): string => {
    args.push(v);
    return param(args.length);
  };
  if (f.tenant !== undefined) where.push(`tenant = ${next(f.tenant)}`);
  if (f.flow !== undefined) where.push(`flow = ${next(f.flow)}`);
  if (f.statuses !== undefined) {
    if (f.statuses.length === 0) return undefined;
    where.push(`status IN (${f.statuses.map(next).join(', ')})`);
  }
  return {
    where: where.length ? `WHERE ${where.join(' AND ')}` : '',
    args,
    limit: Math.max(1, Math.floor(f.limit ?? 50)),
  };
}

/** Whether a claim at `now` takes the key over from `row` (ClaimRequest, FlowStateStore.claim). */
export function claimable(row: InboxRow, now: string, reclaimFailed: boolean): boolean {
  if (row.expires_at <= now) return true;
  if (row.status === 'in_flight') return row.lease_expires_at === null || row.lease_expires_at <= now;
  return row.status === 'failed' && reclaimFailed;
}

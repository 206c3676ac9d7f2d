/** The certificate registry in the PostgreSQL store (the contract and the row shape: store/contracts/certificates.ts). */
import type { PgDb } from './pg-db.js';
import {
  certificateFromRecord,
  certificateParams,
  type CertificateRecord,
  type CertificateRow,
  type CertificatesStore,
  type NewCertificate,
} from '../contracts/index.js';

const INSERT = `INSERT INTO certificates (tenant, name, kind, subject, issuer, serial, valid_from, valid_to, sha256, pem, status, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'current', $11)`;

/** The class of the transaction-level advisory lock a replace takes on its (tenant, name). */
const REPLACE_LOCK_CLASS = 0x5356_4352; // 'SVCR'

export class PgCertificatesStore implements CertificatesStore {
  constructor(private readonly db: PgDb) {}

  async add(c: NewCertificate): Promise<CertificateRow | undefined> {
    // The partial unique index on the current entry decides: a racing add waits for the other's
    // commit and then does nothing.
    const r = await this.db.query<CertificateRecord>(
      `${INSERT} ON CONFLICT (tenant, name) WHERE status = 'current' DO NOTHING RETURNING *`,
      certificateParams(c),
    );
    return r.rows[0] === undefined ? undefined : certificateFromRecord(r.rows[0]);
  }

  async replace(
    c: NewCertificate,
    at: string,
  ): Promise<{ retired: CertificateRow; current: CertificateRow } | undefined> {
    return this.db.transaction(async (tx) => {
      // Replaces of one (tenant, name) queue here. A row lock alone would not do: under READ
      // COMMITTED the second replace, woken after the first committed, would find the entry it
      // waited for retired and would not see the new current one, and answer "none". After this
      // lock each statement reads a snapshot that includes every earlier replace. Two keys that
      // hash alike only queue behind each other.
      await tx.query("SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || '/' || $2 || '/' || $3))", [
        REPLACE_LOCK_CLASS,
        c.tenant,
        c.name,
      ]);
      const old = await tx.query<CertificateRecord>(
        "UPDATE certificates SET status = 'replaced', replaced_at = $3 WHERE tenant = $1 AND name = $2 AND status = 'current' RETURNING *",
        [c.tenant, c.name, at],
      );
      if (old.rows[0] === undefined) return undefined;
      const added = await tx.query<CertificateRecord>(`${INSERT} RETURNING *`, certificateParams(c));
      return { retired: certificateFromRecord(old.rows[0]), current: certificateFromRecord(added.rows[0]!) };
    });
  }

  async byId(id: number): Promise<CertificateRow | undefined> {
    return this.#one('WHERE id = $1', [id]);
  }

  async current(tenant: string, name: string): Promise<CertificateRow | undefined> {
    return this.#one("WHERE tenant = $1 AND name = $2 AND status = 'current'", [tenant, name]);
  }

  async history(tenant: string, name: string): Promise<CertificateRow[]> {
    return (
      await this.db.query<CertificateRecord>(
        'SELECT * FROM certificates WHERE tenant = $1 AND name = $2 ORDER BY id DESC',
        [tenant, name],
      )
    ).rows.map(certificateFromRecord);
  }

  async list(tenant?: string): Promise<CertificateRow[]> {
    const r =
      tenant === undefined
        ? await this.db.query<CertificateRecord>(
            'SELECT * FROM certificates ORDER BY valid_to COLLATE "C", tenant COLLATE "C", name COLLATE "C", id',
          )
        : await this.db.query<CertificateRecord>(
            'SELECT * FROM certificates WHERE tenant = $1 ORDER BY valid_to COLLATE "C", name COLLATE "C", id',
            [tenant],
          );
    return r.rows.map(certificateFromRecord);
  }

  async claimTaskRun(task: string, nowMs: number, intervalMs: number): Promise<boolean> {
    // One statement: a racing claim waits on the row the other wrote, then re-checks the condition
    // against it and finds the interval not yet over. The interval may be fractional (a share of it).
    const r = await this.db.query(
      `INSERT INTO task_runs (task, last_run_ms) VALUES ($1, $2::bigint)
       ON CONFLICT (task) DO UPDATE SET last_run_ms = excluded.last_run_ms
       WHERE excluded.last_run_ms - task_runs.last_run_ms >= $3::float8`,
      [task, nowMs, intervalMs],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async #one(where: string, params: unknown[]): Promise<CertificateRow | undefined> {
    const r = await this.db.query<CertificateRecord>(`SELECT * FROM certificates ${where}`, params);
    return r.rows[0] === undefined ? undefined : certificateFromRecord(r.rows[0]);
  }
}

/** The certificate registry in the registry database: current and replaced entries per (tenant, name). */
import type { Db } from './db.js';
import {
  type CertificateRow,
  type NewCertificate,
  type CertificateRecord,
  certificateFromRecord,
  certificateParams,
  type CertificatesStore,
} from '../contracts/index.js';

export class SqliteCertificatesStore implements CertificatesStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  #insert(c: NewCertificate): CertificateRow {
    const r = this.#db
      .prepare(
        `INSERT INTO certificates (tenant, name, kind, subject, issuer, serial, valid_from, valid_to, sha256, pem, status, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'current', ?)`,
      )
      .run(...certificateParams(c));
    return this.byId(Number(r.lastInsertRowid))!;
  }

  /** Adds a current entry; undefined when the tenant already has a current entry of that name. */
  add(c: NewCertificate): CertificateRow | undefined {
    return this.#db
      .transaction(() => (this.current(c.tenant, c.name) === undefined ? this.#insert(c) : undefined))
      .immediate();
  }

  /** Retires the current entry of (tenant, name) and adds the new one, atomically; undefined when there is no current entry. */
  replace(c: NewCertificate, at: string): { retired: CertificateRow; current: CertificateRow } | undefined {
    return this.#db
      .transaction(() => {
        const old = this.current(c.tenant, c.name);
        if (old === undefined) return undefined;
        this.#db.prepare("UPDATE certificates SET status = 'replaced', replaced_at = ? WHERE id = ?").run(at, old.id);
        return { retired: this.byId(old.id)!, current: this.#insert(c) };
      })
      .immediate();
  }

  byId(id: number): CertificateRow | undefined {
    const r = this.#db.prepare('SELECT * FROM certificates WHERE id = ?').get(id) as CertificateRecord | undefined;
    return r === undefined ? undefined : certificateFromRecord(r);
  }

  current(tenant: string, name: string): CertificateRow | undefined {
    const r = this.#db
      .prepare("SELECT * FROM certificates WHERE tenant = ? AND name = ? AND status = 'current'")
      .get(tenant, name) as CertificateRecord | undefined;
    return r === undefined ? undefined : certificateFromRecord(r);
  }

  /** Every entry of (tenant, name), newest first. */
  history(tenant: string, name: string): CertificateRow[] {
    return (
      this.#db
        .prepare('SELECT * FROM certificates WHERE tenant = ? AND name = ? ORDER BY id DESC')
        .all(tenant, name) as CertificateRecord[]
    ).map(certificateFromRecord);
  }

  /** Every entry (current and replaced), optionally of one tenant, soonest expiry first. */
  list(tenant?: string): CertificateRow[] {
    const rows =
      tenant === undefined
        ? this.#db.prepare('SELECT * FROM certificates ORDER BY valid_to, tenant, name, id').all()
        : this.#db.prepare('SELECT * FROM certificates WHERE tenant = ? ORDER BY valid_to, name, id').all(tenant);
    return (rows as CertificateRecord[]).map(certificateFromRecord);
  }

  /**
   * Claims a run of an installation-wide task (compare-and-set on its last run): true for exactly
   * one caller per interval, whichever process asks first.
   */
  claimTaskRun(task: string, nowMs: number, intervalMs: number): boolean {
    return this.#db
      .transaction(() => {
        const row = this.#db.prepare('SELECT last_run_ms AS t FROM task_runs WHERE task = ?').get(task) as
          { t: number } | undefined;
        if (row !== undefined && nowMs - row.t < intervalMs) return false;
        this.#db
          .prepare(
            'INSERT INTO task_runs (task, last_run_ms) VALUES (?, ?) ON CONFLICT (task) DO UPDATE SET last_run_ms = excluded.last_run_ms',
          )
          .run(task, nowMs);
        return true;
      })
      .immediate();
  }
}

/** The certificates contract: a certificate row, its record mapper and its insert parameters. */
import type { Awaitable } from '../../common/awaitable.js';

export type CertKind = 'client_cert' | 'server_cert' | 'ca_cert';

export interface CertificateRow {
  readonly id: number;
  readonly tenant: string;
  readonly name: string;
  readonly kind: CertKind;
  readonly subject: string;
  readonly issuer: string;
  readonly serial: string;
  readonly validFrom: string;
  readonly validTo: string;
  readonly sha256: string;
  readonly pem: string;
  readonly status: 'current' | 'replaced';
  readonly createdAt: string;
  readonly replacedAt: string | null;
}

export type NewCertificate = Omit<CertificateRow, 'id' | 'status' | 'replacedAt'>;

/** A `certificates` row as both stores return it (`SELECT *`). */
export interface CertificateRecord {
  id: number;
  tenant: string;
  name: string;
  kind: CertKind;
  subject: string;
  issuer: string;
  serial: string;
  valid_from: string;
  valid_to: string;
  sha256: string;
  pem: string;
  status: 'current' | 'replaced';
  created_at: string;
  replaced_at: string | null;
}

export const certificateFromRecord = (r: CertificateRecord): CertificateRow => ({
  id: r.id,
  tenant: r.tenant,
  name: r.name,
  kind: r.kind,
  subject: r.subject,
  issuer: r.issuer,
  serial: r.serial,
  validFrom: r.valid_from,
  validTo: r.valid_to,
  sha256: r.sha256,
  pem: r.pem,
  status: r.status,
  createdAt: r.created_at,
  replacedAt: r.replaced_at,
});

/** The values of a new entry, in the order of the INSERT's columns (tenant ... pem, created_at). */
export const certificateParams = (c: NewCertificate): unknown[] => [
  c.tenant,
  c.name,
  c.kind,
  c.subject,
  c.issuer,
  c.serial,
  c.validFrom,
  c.validTo,
  c.sha256,
  c.pem,
  c.createdAt,
];

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface CertificatesStore {
  /** Undefined when (tenant, name) already has a current entry. */
  add(c: NewCertificate): Awaitable<CertificateRow | undefined>;
  /** Retires the current entry and adds the new one atomically; undefined when there is none. */
  replace(c: NewCertificate, at: string): Awaitable<{ retired: CertificateRow; current: CertificateRow } | undefined>;
  byId(id: number): Awaitable<CertificateRow | undefined>;
  current(tenant: string, name: string): Awaitable<CertificateRow | undefined>;
  /** Newest first. */
  history(tenant: string, name: string): Awaitable<CertificateRow[]>;
  /** Soonest expiry first. */
  list(tenant?: string): Awaitable<CertificateRow[]>;
  /** Compare-and-set on a task's last run: true for exactly one caller per interval, cluster-wide. */
  claimTaskRun(task: string, nowMs: number, intervalMs: number): Awaitable<boolean>;
}

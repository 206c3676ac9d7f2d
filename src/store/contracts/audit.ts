/** The audit trail contract: entries, their canonical hash chain, and the chain check both backends run. */
import { randomUUID } from 'node:crypto';
import { isoNow } from '../../common/clock.js';
import { sha256Hex } from '../../common/digest.js';
import { jsonString } from '../../common/json-text.js';
import { SvcError } from '../../common/errors.js';
import type { Awaitable } from '../../common/awaitable.js';

/** `prev_hash` of the first entry of every chain. */
export const GENESIS_HASH = '0'.repeat(64);

export interface AuditEntryInput {
  readonly tenant: string;
  /** e.g. `tenant.registered`, `access.denied`, `queue.message.enqueued`. */
  readonly eventType: string;
  /** @default a fresh UUID v4, so every entry can be told apart in the log */
  readonly correlationId?: string;
  /** Any JSON value, stored as JSON text. @default {} */
  readonly payload?: unknown;
  /** ISO 8601 UTC. @default the time of the append (or of AuditThreadWriter.append) */
  readonly createdAt?: string;
}

export interface AuditEntry {
  readonly tenant: string;
  readonly seq: number;
  readonly eventType: string;
  readonly createdAt: string;
  readonly correlationId: string;
  /** JSON text exactly as hashed. */
  readonly payload: string;
  readonly prevHash: string;
  readonly hash: string;
}

/** An entry with every default applied, ready to be chained. */
export type PreparedAuditEntry = Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>;

export type AuditVerifyResult =
  | { readonly ok: true; readonly tenant: string; readonly count: number; readonly headHash: string }
  | {
      readonly ok: false;
      readonly tenant: string;
      /** Entries that verified before the break. */
      readonly count: number;
      /** The first seq at which the chain is broken. */
      readonly brokenSeq: number;
      readonly reason: string;
    };

/** Which entries of one chain a page lists, newest first. */
export interface AuditPageQuery {
  /** Only entries with a smaller seq: the last seq of the previous page. @default none (the newest) */
  readonly beforeSeq?: number;
  /** Only entries of this event type (exact match). */
  readonly eventType?: string;
  /** Only entries whose payload is a JSON object whose top-level `actor` is this text (exact match). */
  readonly actor?: string;
  /** Most entries returned. */
  readonly limit: number;
}

/**
 * The audit trail's contract: one hash chain per tenant, appended atomically across processes and
 * nodes. (SqliteAuditStore.transaction, the SQLite cross-file lock, is not part of it: on PostgreSQL a
 * state change and its entry share one transaction, see store/pg/pg-audit-store.ts appendAuditIn.)
 */
export interface AuditStore {
  /** Appends one entry in a transaction of its own and returns it chained. */
  append(input: AuditEntryInput): Awaitable<AuditEntry>;
  /** Appends entries, in order, in one transaction: all or none. */
  appendMany(entries: readonly AuditEntryInput[]): Awaitable<AuditEntry[]>;
  /** Like appendMany, for entries already through prepareAuditEntry. */
  appendPrepared(entries: readonly PreparedAuditEntry[]): Awaitable<AuditEntry[]>;
  /** The newest `limit` entries of the chain, oldest of them first. */
  latest(tenant: string, limit: number): Awaitable<AuditEntry[]>;
  count(tenant: string): Awaitable<number>;
  /** A page of the chain, newest first, filtered in the store (a rare type is not buried under thousands of others). */
  page(tenant: string, q: AuditPageQuery): Awaitable<AuditEntry[]>;
  /** The event types the chain holds, each once, sorted. */
  eventTypes(tenant: string): Awaitable<string[]>;
  /** Up to `limit` entries of the given event types with seq above `afterSeq`, in seq order (paging a check over the chain). */
  entriesOfTypes(tenant: string, types: readonly string[], afterSeq: number, limit: number): Awaitable<AuditEntry[]>;
  /** Recomputes the chain as of the call's start; reports the first broken seq and why. */
  verify(tenant: string): Awaitable<AuditVerifyResult>;
}

/** The canonical hash of an entry (see the module comment). */
export function auditHash(e: Omit<AuditEntry, 'hash'>): string {
  // The same bytes as chainHash (the tests compare both with this form), written by JSON.stringify:
  // over a long verify the hand-quoted text's temporary strings were promoted and piled up in old
  // space, and the peak memory grew with the chain; this form kept it flat and ran 8% faster.
  return sha256Hex(JSON.stringify([e.tenant, e.seq, e.eventType, e.createdAt, e.correlationId, e.payload, e.prevHash]));
}

/**
 * The canonical hash from the fields: the JSON array is written by hand, each string exactly as
 * JSON.stringify writes it (the audit thread hashes every entry; the call and its array were a
 * third of its time).
 */
function chainHash(
  tenant: string,
  seq: number,
  eventType: string,
  createdAt: string,
  correlationId: string,
  payload: string,
  prevHash: string,
): string {
  return sha256Hex(
    `[${jsonString(tenant)},${seq},${jsonString(eventType)},${jsonString(createdAt)},${jsonString(correlationId)},${jsonString(payload)},${jsonString(prevHash)}]`,
  );
}

/** The last entry of a chain as an append needs it: seq 0 and GENESIS_HASH for a new chain. */
export interface AuditHead {
  readonly seq: number;
  readonly hash: string;
}

/** A prepared entry chained onto `head`: the next seq, and its hash over the previous one. */
export function chainEntry(e: PreparedAuditEntry, head: AuditHead): AuditEntry {
  const seq = head.seq + 1;
  const hash = chainHash(e.tenant, seq, e.eventType, e.createdAt, e.correlationId, e.payload, head.hash);
  return Object.freeze({
    tenant: e.tenant,
    seq,
    eventType: e.eventType,
    createdAt: e.createdAt,
    correlationId: e.correlationId,
    payload: e.payload,
    prevHash: head.hash,
    hash,
  });
}

/** Applies defaults and serialises the payload; throws on an entry that cannot be stored. */
export function prepareAuditEntry(input: AuditEntryInput, now?: Date): PreparedAuditEntry {
  if (typeof input.tenant !== 'string' || input.tenant === '')
    throw new SvcError('SVC_ERR_INVALID_INPUT', 'audit entry needs a tenant');
  if (typeof input.eventType !== 'string' || input.eventType === '')
    throw new SvcError('SVC_ERR_INVALID_INPUT', 'audit entry needs an event type');
  const payload = JSON.stringify(input.payload ?? {});
  if (payload === undefined)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `audit payload of ${input.eventType} has no JSON form`);
  return {
    tenant: input.tenant,
    eventType: input.eventType,
    createdAt: input.createdAt ?? isoNow(now),
    correlationId: input.correlationId ?? randomUUID(),
    payload,
  };
}

/** Values per entry in a packed batch (see packAuditEntries). */
export const PACKED_WIDTH = 5;

/** Prepared entries as one flat array of strings: cheap to hand to the writer thread. */
export function packAuditEntries(entries: readonly PreparedAuditEntry[]): string[] {
  const flat: string[] = [];
  for (const e of entries) flat.push(e.tenant, e.eventType, e.createdAt, e.correlationId, e.payload);
  return flat;
}

export function unpackAuditEntries(flat: readonly string[]): PreparedAuditEntry[] {
  const out: PreparedAuditEntry[] = [];
  for (let i = 0; i + PACKED_WIDTH <= flat.length; i += PACKED_WIDTH) {
    out.push({
      tenant: flat[i]!,
      eventType: flat[i + 1]!,
      createdAt: flat[i + 2]!,
      correlationId: flat[i + 3]!,
      payload: flat[i + 4]!,
    });
  }
  return out;
}

/** An `audit_entries` row as stored (snake_case columns). */
export interface AuditRow {
  tenant: string;
  seq: number;
  event_type: string;
  created_at: string;
  correlation_id: string;
  payload: string;
  prev_hash: string;
  hash: string;
}

export function auditEntryFromRow(r: AuditRow): AuditEntry {
  return Object.freeze({
    tenant: r.tenant,
    seq: r.seq,
    eventType: r.event_type,
    createdAt: r.created_at,
    correlationId: r.correlation_id,
    payload: r.payload,
    prevHash: r.prev_hash,
    hash: r.hash,
  });
}

/** The columns of an `audit_entries` row, in AuditRow's order. */
export const AUDIT_COLUMNS = 'tenant, seq, event_type, created_at, correlation_id, payload, prev_hash, hash';
/** Rows read per statement by verify(), so a long chain never holds a read lock for long. */
export const AUDIT_VERIFY_PAGE = 500;

/** A chain's head record and highest seq, read in one statement (one snapshot). */
export interface AuditSnapshot {
  readonly head_seq: number | null;
  readonly head_hash: string | null;
  readonly max_seq: number | null;
}

/**
 * The row-by-row check of one chain, fed its rows in seq order by either backend (each reads them
 * page by page: `seq > after AND seq <= upTo ORDER BY seq LIMIT page`). `row()` answers the first
 * break it sees; `finish()` the verdict once the rows ran out.
 */
export class AuditChainCheck {
  readonly #tenant: string;
  readonly #headSeq: number | null;
  readonly #headHash: string | null;
  readonly #empty: boolean;
  /** Entries appended after the snapshot have a seq above both and are left for the next run. */
  readonly upTo: number;
  /** The seq of the last row checked: the next page starts after it. */
  after = Number.MIN_SAFE_INTEGER;
  #expected = 1;
  #prevHash = GENESIS_HASH;
  #count = 0;

  constructor(tenant: string, snap: AuditSnapshot) {
    this.#tenant = tenant;
    this.#headSeq = snap.head_seq;
    this.#headHash = snap.head_hash;
    this.#empty = snap.head_seq === null && snap.max_seq === null;
    this.upTo = Math.max(snap.head_seq ?? 0, snap.max_seq ?? 0);
  }

  /** No entry and no head record: an empty chain, nothing to read. */
  get empty(): boolean {
    return this.#empty;
  }

  /** Checks the next row; a result means the chain is broken there (stop reading). */
  row(row: AuditRow): AuditVerifyResult | undefined {
    const expected = this.#expected;
    if (row.seq !== expected) {
      return row.seq > expected
        ? this.#broken(expected, `seq ${expected} is missing (the next entry is seq ${row.seq}): entries were deleted`)
        : this.#broken(row.seq, `seq ${row.seq} is out of sequence (expected seq ${expected}): an entry was inserted`);
    }
    const recomputed = auditHash({
      tenant: row.tenant,
      seq: row.seq,
      eventType: row.event_type,
      createdAt: row.created_at,
      correlationId: row.correlation_id,
      payload: row.payload,
      prevHash: row.prev_hash,
    });
    if (recomputed !== row.hash)
      return this.#broken(row.seq, `the stored hash does not match the entry's contents: the entry was altered`);
    if (row.prev_hash !== this.#prevHash) {
      return this.#broken(
        row.seq,
        `prev_hash does not match the hash of seq ${row.seq - 1}: an entry before it was altered, removed or inserted`,
      );
    }
    if (this.#headSeq !== null && row.seq > this.#headSeq) {
      return this.#broken(
        row.seq,
        `seq ${row.seq} lies past the chain's recorded head (seq ${this.#headSeq}): an entry was inserted`,
      );
    }
    this.#prevHash = row.hash;
    this.#expected += 1;
    this.#count += 1;
    this.after = row.seq;
    return undefined;
  }

  /** The verdict once every row up to `upTo` passed `row()`. */
  finish(): AuditVerifyResult {
    const tenant = this.#tenant;
    const count = this.#count;
    const headSeq = this.#headSeq;
    if (this.empty) return { ok: true, tenant, count: 0, headHash: GENESIS_HASH };
    if (headSeq === null) return this.#broken(this.upTo, 'the chain head record (audit_heads) is missing');
    if (count < headSeq) {
      return this.#broken(
        count + 1,
        `entries from seq ${count + 1} to ${headSeq} are missing: the chain head records seq ${headSeq}`,
      );
    }
    if (this.#headHash !== this.#prevHash)
      return this.#broken(headSeq, `the last entry's hash differs from the chain head record: the entry was replaced`);
    return { ok: true, tenant, count, headHash: this.#prevHash };
  }

  #broken(brokenSeq: number, reason: string): AuditVerifyResult {
    return { ok: false, tenant: this.#tenant, count: this.#count, brokenSeq, reason };
  }
}

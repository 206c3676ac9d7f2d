/**
 * The registry reads of the request path over PostgreSQL, answered from memory: every key (by
 * hash), tenant, `latest` ref with its artifact bytes, trace flag, setting and latest protobuf
 * descriptor (the gRPC door), loaded at start on
 * one snapshot and kept current from `registry_changes` (0001_initial.sql), the change log every
 * registry write appends to in commit order.
 *
 * A node learns of a change by LISTEN on `svc_registry` (milliseconds), and by a poll every
 * `pollIntervalMs` in case a notification is lost with its connection. Each poll that reaches the
 * database confirms the copy. A read when no poll has confirmed it for `maxStaleMs` throws
 * StorageUnavailableError: the gate answers 503 rather than vouch for a key that may have been
 * revoked meanwhile. So a key revoked on one node is refused by every node within
 * max(poll interval, maxStaleMs) at worst, and an unauthenticated caller costs no query at all.
 */
import { StorageUnavailableError } from '../../common/errors.js';
import { parseSetting, type SettingName } from '../../common/settings.js';
import type { PgDb, PgSession, PgTx } from './pg-db.js';
import {
  type FlowVersionRef,
  type LatestRef,
  verifiedArtifact,
  KEY_COLUMNS,
  keyFromRecord,
  type ApiKeyRow,
  type KeyRecord,
  type RegistryReads,
  DESCRIPTOR_COLUMNS,
  DESCRIPTOR_LATEST_FROM,
  toStoredDescriptor,
  type DescriptorReads,
  type DescriptorRecord,
  type StoredDescriptor,
  toTenant,
  type Tenant,
  type TenantRow,
} from '../contracts/index.js';

export interface PgRegistryMirrorOptions {
  /** @default 200 */
  readonly pollIntervalMs?: number;
  /** A read this long after the last confirmation throws. @default 1000 */
  readonly maxStaleMs?: number;
  /** Told when a refresh fails (the reads turn unavailable once the copy is stale). */
  readonly onError?: (err: unknown) => void;
  /** Changes read in one refresh at most; more are a full reload. @default 10000 */
  readonly maxChangesPerRefresh?: number;
}

interface LatestEntry {
  readonly ref: FlowVersionRef;
  readonly bytes: Buffer;
}

interface Change {
  seq: number;
  kind: 'key' | 'tenant' | 'latest' | 'trace' | 'setting' | 'descriptor';
  k1: string;
  k2: string;
}

const LATEST_SELECT = `SELECT l.tenant, l.name, v.version, v.hash, v.created_at, a.bytes FROM flow_latest l
  JOIN flow_versions v ON v.tenant = l.tenant AND v.name = l.name AND v.version = l.version
  JOIN artifacts a ON a.hash = v.hash`;

const pairKey = (a: string, b: string) => `${a}/${b}`;

const DESCRIPTOR_SELECT = `SELECT ${DESCRIPTOR_COLUMNS}, d.bytes FROM ${DESCRIPTOR_LATEST_FROM}`;

export class PgRegistryMirror implements RegistryReads, DescriptorReads {
  readonly #db: PgDb;
  readonly #maxStaleMs: number;
  readonly #maxChanges: number;
  readonly #onError: (err: unknown) => void;
  #keys = new Map<string, ApiKeyRow>();
  #tenants = new Map<string, Tenant>();
  #latest = new Map<string, LatestEntry>();
  /** The artifacts `#latest` points at, by hash, with how many flows point at each (two flows may share one). */
  #artifacts = new Map<string, { bytes: Buffer; refs: number }>();
  #trace = new Set<string>();
  #settings = new Map<string, string>();
  /** Latest protobuf descriptors by tenant, then name (the gRPC door's method catalog). */
  #descriptors = new Map<string, Map<string, StoredDescriptor>>();
  #seq = 0;
  #confirmedAt = 0;
  #refreshing: Promise<void> | undefined;
  #again = false;
  #closed = false;
  readonly #poll: NodeJS.Timeout;
  #listener: PgSession | undefined;

  private constructor(db: PgDb, opts: PgRegistryMirrorOptions) {
    this.#db = db;
    this.#maxStaleMs = opts.maxStaleMs ?? 1000;
    this.#maxChanges = opts.maxChangesPerRefresh ?? 10_000;
    this.#onError = opts.onError ?? (() => undefined);
    this.#poll = setInterval(() => void this.refresh().catch(this.#onError), opts.pollIntervalMs ?? 200);
    this.#poll.unref();
  }

  /**
   * Loads the whole copy and starts following changes. Throws StorageUnavailableError when the
   * database cannot be read, naming the store: at boot the bare driver message (`relation "tenants"
   * does not exist`) would not tell the operator which store or what was being read.
   */
  static async open(db: PgDb, opts: PgRegistryMirrorOptions = {}): Promise<PgRegistryMirror> {
    const mirror = new PgRegistryMirror(db, opts);
    try {
      await mirror.#fullLoad();
    } catch (err) {
      mirror.close();
      if (err instanceof StorageUnavailableError) throw err;
      throw new StorageUnavailableError(
        `the registry could not be read from the PostgreSQL store ${db.url.redacted}: ${(err as Error).message}`,
        err,
      );
    }
    void mirror.#listen();
    return mirror;
  }

  findKeyByHash(hash: string): ApiKeyRow | undefined {
    this.#assertFresh();
    return this.#keys.get(hash);
  }

  tenant(id: string): Tenant | undefined {
    this.#assertFresh();
    return this.#tenants.get(id);
  }

  resolveLatest(tenant: string, name: string): FlowVersionRef | undefined {
    this.#assertFresh();
    return this.#latest.get(pairKey(tenant, name))?.ref;
  }

  traceEnabled(tenant: string, flow: string): boolean {
    this.#assertFresh();
    return this.#trace.has(pairKey(tenant, flow));
  }

  setting(name: SettingName): number {
    this.#assertFresh();
    return parseSetting(name, this.#settings.get(name));
  }

  /**
   * The bytes of an artifact some flow's `latest` points at, verified against the hash; undefined
   * for any other hash (the request path only ever loads latest versions).
   */
  getArtifact(hash: string): Buffer | undefined {
    this.#assertFresh();
    const held = this.#artifacts.get(hash);
    return held === undefined ? undefined : verifiedArtifact(hash, held.bytes);
  }

  /** The latest descriptor of every name of a tenant, newest deployment first (as the SQLite repository orders them). */
  latestOfTenant(tenant: string): StoredDescriptor[] {
    this.#assertFresh();
    return [...(this.#descriptors.get(tenant)?.values() ?? [])].sort(
      (a, b) => cmp(b.deployedAt, a.deployedAt) || cmp(a.name, b.name),
    );
  }

  /** The change log position: it moves with every registry change, descriptors included. */
  changeToken(): string {
    this.#assertFresh();
    return String(this.#seq);
  }

  /** Every flow's latest ref, by tenant and name (the start-up scans). */
  listLatest(): LatestRef[] {
    this.#assertFresh();
    return [...this.#latest.entries()]
      .map(([k, e]) => {
        const slash = k.indexOf('/');
        return { tenant: k.slice(0, slash), name: k.slice(slash + 1), ...e.ref };
      })
      .sort((a, b) => (a.tenant === b.tenant ? cmp(a.name, b.name) : cmp(a.tenant, b.tenant)));
  }

  /** Reads from memory are one snapshot already. */
  readSnapshot<T>(fn: () => T): T {
    return fn();
  }

  /** The change log position the copy reflects. */
  get seq(): number {
    return this.#seq;
  }

  /** A write through this process: catch up at once rather than at the next notification. */
  invalidate(): void {
    void this.refresh().catch(this.#onError);
  }

  /** Reads every change since the last one applied; concurrent calls share one round. */
  async refresh(): Promise<void> {
    if (this.#refreshing !== undefined) {
      this.#again = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      try {
        do {
          this.#again = false;
          await this.#catchUp();
        } while (this.#again && !this.#closed);
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#poll);
    void this.#listener?.end().catch(() => undefined);
    this.#listener = undefined;
  }

  #assertFresh(): void {
    if (performance.now() - this.#confirmedAt > this.#maxStaleMs) {
      throw new StorageUnavailableError(
        `the registry copy has not been confirmed by the PostgreSQL store for over ${this.#maxStaleMs} ms`,
      );
    }
  }

  async #fullLoad(): Promise<void> {
    const started = performance.now();
    await this.#db.readSnapshot(async (tx) => {
      const seq = await maxSeq(tx);
      const keys = (await tx.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys`)).rows;
      const tenants = (
        await tx.query<TenantRow>('SELECT id, display_name, status, auth_methods, created_at FROM tenants')
      ).rows;
      const latest = (await tx.query<LatestRef & { bytes: Buffer }>(LATEST_SELECT)).rows;
      const trace = (
        await tx.query<{ tenant: string; flow: string }>('SELECT tenant, flow FROM trace_config WHERE enabled')
      ).rows;
      const settings = (await tx.query<{ key: string; value: string }>('SELECT key, value FROM system_config')).rows;
      const descriptors = (await tx.query<DescriptorRecord>(DESCRIPTOR_SELECT)).rows;
      this.#keys = new Map(keys.map((r) => [r.key_hash, keyFromRecord(r)]));
      this.#tenants = new Map(tenants.map((r) => [r.id, toTenant(r)]));
      this.#latest = new Map();
      this.#artifacts = new Map();
      for (const r of latest) this.#setLatest(pairKey(r.tenant, r.name), latestEntry(r));
      this.#trace = new Set(trace.map((r) => pairKey(r.tenant, r.flow)));
      this.#settings = new Map(settings.map((r) => [r.key, r.value]));
      this.#descriptors = new Map();
      for (const r of descriptors) this.#setDescriptor(r.tenant, r.name, toStoredDescriptor(r));
      this.#seq = seq;
    });
    this.#confirmedAt = started;
  }

  async #catchUp(): Promise<void> {
    const started = performance.now();
    const full = await this.#db.readSnapshot(async (tx) => {
      // Changes this copy has not seen may have been pruned: then it is read whole again.
      const horizon =
        (await tx.query<{ below: number }>('SELECT below FROM registry_changes_horizon')).rows[0]?.below ?? 0;
      if (horizon > this.#seq + 1) return true;
      const changes = (
        await tx.query<Change>('SELECT seq, kind, k1, k2 FROM registry_changes WHERE seq > $1 ORDER BY seq LIMIT $2', [
          this.#seq,
          this.#maxChanges + 1,
        ])
      ).rows;
      if (changes.length > this.#maxChanges) return true;
      if (changes.length > 0) {
        await this.#apply(tx, changes);
        this.#seq = changes[changes.length - 1]!.seq;
      }
      return false;
    });
    if (full) await this.#fullLoad();
    else this.#confirmedAt = started;
  }

  /** Re-reads the rows the changes name, on the snapshot the changes were read on. */
  async #apply(tx: PgTx, changes: readonly Change[]): Promise<void> {
    const of = (kind: Change['kind']) => [
      ...new Map(changes.filter((c) => c.kind === kind).map((c) => [pairKey(c.k1, c.k2), c])).values(),
    ];
    const keys = of('key').map((c) => c.k1);
    if (keys.length > 0) {
      const rows = (await tx.query<KeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ANY($1)`, [keys]))
        .rows;
      for (const k of keys) this.#keys.delete(k);
      for (const r of rows) this.#keys.set(r.key_hash, keyFromRecord(r));
    }
    const tenants = of('tenant').map((c) => c.k1);
    if (tenants.length > 0) {
      const rows = (
        await tx.query<TenantRow>(
          'SELECT id, display_name, status, auth_methods, created_at FROM tenants WHERE id = ANY($1)',
          [tenants],
        )
      ).rows;
      for (const t of tenants) this.#tenants.delete(t);
      for (const r of rows) this.#tenants.set(r.id, toTenant(r));
    }
    const latest = of('latest');
    if (latest.length > 0) {
      const rows = (
        await tx.query<LatestRef & { bytes: Buffer }>(
          `${LATEST_SELECT} WHERE (l.tenant, l.name) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
          [latest.map((c) => c.k1), latest.map((c) => c.k2)],
        )
      ).rows;
      for (const c of latest) this.#setLatest(pairKey(c.k1, c.k2), undefined);
      for (const r of rows) this.#setLatest(pairKey(r.tenant, r.name), latestEntry(r));
    }
    const trace = of('trace');
    if (trace.length > 0) {
      const rows = (
        await tx.query<{ tenant: string; flow: string }>(
          'SELECT tenant, flow FROM trace_config WHERE enabled AND (tenant, flow) IN (SELECT * FROM unnest($1::text[], $2::text[]))',
          [trace.map((c) => c.k1), trace.map((c) => c.k2)],
        )
      ).rows;
      for (const c of trace) this.#trace.delete(pairKey(c.k1, c.k2));
      for (const r of rows) this.#trace.add(pairKey(r.tenant, r.flow));
    }
    const descriptors = of('descriptor');
    if (descriptors.length > 0) {
      const rows = (
        await tx.query<DescriptorRecord>(
          `${DESCRIPTOR_SELECT} WHERE (l.tenant, l.name) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
          [descriptors.map((c) => c.k1), descriptors.map((c) => c.k2)],
        )
      ).rows;
      for (const c of descriptors) this.#setDescriptor(c.k1, c.k2, undefined);
      for (const r of rows) this.#setDescriptor(r.tenant, r.name, toStoredDescriptor(r));
    }
    const settings = of('setting').map((c) => c.k1);
    if (settings.length > 0) {
      const rows = (
        await tx.query<{ key: string; value: string }>('SELECT key, value FROM system_config WHERE key = ANY($1)', [
          settings,
        ])
      ).rows;
      for (const k of settings) this.#settings.delete(k);
      for (const r of rows) this.#settings.set(r.key, r.value);
    }
  }

  #setDescriptor(tenant: string, name: string, d: StoredDescriptor | undefined): void {
    let names = this.#descriptors.get(tenant);
    if (d === undefined) {
      names?.delete(name);
      if (names?.size === 0) this.#descriptors.delete(tenant);
      return;
    }
    if (names === undefined) this.#descriptors.set(tenant, (names = new Map()));
    names.set(name, d);
  }

  #setLatest(key: string, entry: LatestEntry | undefined): void {
    const old = this.#latest.get(key);
    if (old !== undefined) {
      const held = this.#artifacts.get(old.ref.hash)!;
      if (--held.refs === 0) this.#artifacts.delete(old.ref.hash);
      this.#latest.delete(key);
    }
    if (entry === undefined) return;
    this.#latest.set(key, entry);
    const held = this.#artifacts.get(entry.ref.hash);
    if (held === undefined) this.#artifacts.set(entry.ref.hash, { bytes: entry.bytes, refs: 1 });
    else held.refs += 1;
  }

  /** LISTEN on a connection of its own, re-established after a loss; the poll covers the gap. */
  async #listen(): Promise<void> {
    let delayMs = 250;
    while (!this.#closed) {
      try {
        const session = await this.#db.openSession({}, 'svc-registry-listen');
        if (this.#closed) {
          await session.end();
          return;
        }
        this.#listener = session;
        const lost = new Promise<void>((resolve) => session.onLost(() => resolve()));
        session.onNotification((_channel, payload) => {
          if (payload === this.#db.schema) this.invalidate();
        });
        await session.query('LISTEN svc_registry');
        delayMs = 250;
        // Changes committed before LISTEN took effect are not missed: the next poll reads them.
        this.invalidate();
        await lost;
        this.#listener = undefined;
        await session.end();
      } catch (err) {
        this.#onError(err);
      }
      if (this.#closed) return;
      await new Promise((r) => setTimeout(r, delayMs).unref());
      delayMs = Math.min(delayMs * 2, 5000);
    }
  }
}

async function maxSeq(tx: PgTx): Promise<number> {
  return (await tx.query<{ seq: number }>('SELECT coalesce(max(seq), 0)::bigint AS seq FROM registry_changes')).rows[0]!
    .seq;
}

function latestEntry(r: LatestRef & { bytes: Buffer }): LatestEntry {
  return { ref: Object.freeze({ version: r.version, hash: r.hash, created_at: r.created_at }), bytes: r.bytes };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Deletes registry changes older than `keepMs` and moves the horizon past them (once per cluster,
 * by the housekeeping node). A node keeps up within a poll, so an hour of changes is ample; one
 * that was away longer reads the registry whole.
 * @returns how many changes were deleted
 */
export async function pruneRegistryChanges(db: PgDb, keepMs: number): Promise<number> {
  return db.transaction(async (tx) => {
    const r = await tx.query<{ top: number | null; n: number }>(
      `WITH gone AS (DELETE FROM registry_changes WHERE at < now() - make_interval(secs => $1::double precision / 1000) RETURNING seq)
       SELECT max(seq)::bigint AS top, count(*)::int AS n FROM gone`,
      [keepMs],
    );
    const { top, n } = r.rows[0]!;
    if (top !== null)
      await tx.query(
        'INSERT INTO registry_changes_horizon (id, below) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET below = greatest(registry_changes_horizon.below, excluded.below)',
        [top + 1],
      );
    return n;
  });
}

/**
 * The cluster-wide locks of one node, held on one PostgreSQL session of its own: one per queue the
 * node consumes, and the scheduler's. They are session-level advisory locks, which the server
 * releases when the session ends:
 * - at once when the process dies (the kernel closes its socket);
 * - after `leaseMs` when the process is paused or cut off: the session runs with
 *   `idle_session_timeout` = leaseMs, and a heartbeat every `heartbeatMs` keeps a live node's
 *   session from ever being idle that long.
 * A holder acts only while `assertHeld()` passes: the last heartbeat answered within half the
 * lease, or one answers now; otherwise the session is gone, and with it every lock.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { PgDb, PgSession } from '../../store/pg/pg-db.js';
import type { LeaderLock } from './leader-lock.js';

/** The application name of every lease session, followed by the node's `host:pid` (pg_stat_activity). */
export const LEASE_APPLICATION = 'svc-lease';

export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

export interface NodeLeaseOptions {
  /** @default 10000 */
  readonly leaseMs?: number;
  /** @default 1000 */
  readonly heartbeatMs?: number;
  /** The session (and every lock on it) was lost; a new session is opened by the next `ensureSession`. */
  readonly onLost?: (err: Error) => void;
  /** Channels to LISTEN on, with what to do with each notification's payload. */
  readonly listen?: Readonly<Record<string, (payload: string) => void>>;
}

/** A 64-bit advisory lock key (decimal text), and its two 32-bit halves as pg_locks shows them (classid, objid). */
export interface LockKey {
  readonly key: string;
  readonly classid: number;
  readonly objid: number;
}

export class NodeLease {
  readonly #db: PgDb;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #opts: NodeLeaseOptions;
  #session: PgSession | undefined;
  #opening: Promise<PgSession> | undefined;
  #aliveAt = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #held = new Set<string>();

  constructor(db: PgDb, opts: NodeLeaseOptions = {}) {
    this.#db = db;
    this.#leaseMs = opts.leaseMs ?? 10_000;
    this.#heartbeatMs = opts.heartbeatMs ?? 1000;
    this.#opts = opts;
  }

  get leaseMs(): number {
    return this.#leaseMs;
  }

  /** Takes `name`'s lock if no session holds it; true when this node holds it now. */
  async tryLock(name: string): Promise<boolean> {
    const session = await this.#ensureSession();
    if (this.#held.has(name)) return true;
    const r = await session.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [
      this.#key(name).key,
    ]);
    if (r.rows[0]!.ok) this.#held.add(name);
    return r.rows[0]!.ok;
  }

  /** `name`'s lock as a LeaderLock (the scheduler's), or undefined when another node holds it. */
  async tryLeaderLock(name: string): Promise<LeaderLock | undefined> {
    if (!(await this.tryLock(name))) return undefined;
    return {
      tookOver: false,
      stillHeld: () =>
        this.assertHeld(name).then(
          () => true,
          () => false,
        ),
      stillHeldSync: () => this.holds(name) && performance.now() - this.#aliveAt <= this.#leaseMs / 2,
      release: () => this.unlock(name),
    };
  }

  /** Gives `name`'s lock back (nothing when it is not held, or the session is gone with it). */
  async unlock(name: string): Promise<void> {
    if (!this.#held.delete(name)) return;
    const session = this.#session;
    if (session === undefined || session.lost) return;
    await session.query('SELECT pg_advisory_unlock($1::bigint)', [this.#key(name).key]).catch(() => undefined);
  }

  holds(name: string): boolean {
    return this.#held.has(name) && this.#session !== undefined && !this.#session.lost;
  }

  /** True when another session (another node) holds `name`'s lock now. */
  async heldElsewhere(name: string): Promise<boolean> {
    if (this.holds(name)) return false;
    return (await this.holderOf(name)) !== undefined;
  }

  /** The `host:pid` of the node whose lease holds `name`'s lock now (this one included); undefined: none. */
  async holderOf(name: string): Promise<{ host: string; pid: number } | undefined> {
    const k = this.#key(name);
    const r = await this.#db.query<{ app: string }>(
      `SELECT a.application_name AS app FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1 AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [k.classid, k.objid],
    );
    const app = r.rows[0]?.app;
    if (app === undefined) return undefined;
    const m = /^\S+ (.+):(\d+)$/.exec(app);
    return m === null ? { host: app, pid: 0 } : { host: m[1]!, pid: Number(m[2]) };
  }

  /** @throws LeaseLostError when this node cannot vouch that it still holds its locks. */
  async assertHeld(name: string): Promise<void> {
    if (!this.holds(name)) throw new LeaseLostError(`this node no longer holds the lock of ${name}`);
    if (performance.now() - this.#aliveAt <= this.#leaseMs / 2) return;
    try {
      await this.#beat();
    } catch (err) {
      throw new LeaseLostError(`the lease session was lost: ${(err as Error).message}`);
    }
    if (!this.holds(name)) throw new LeaseLostError(`this node no longer holds the lock of ${name}`);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    this.#held.clear();
    await this.#opening?.catch(() => undefined);
    const s = this.#session;
    this.#session = undefined;
    await s?.end();
  }

  async #ensureSession(): Promise<PgSession> {
    if (this.#closed) throw new LeaseLostError('the node lease is closed');
    if (this.#session !== undefined && !this.#session.lost) return this.#session;
    this.#opening ??= this.#open().finally(() => (this.#opening = undefined));
    return this.#opening;
  }

  async #open(): Promise<PgSession> {
    const session = await this.#db.openSession(
      { idle_session_timeout: String(this.#leaseMs) },
      `${LEASE_APPLICATION} ${hostname()}:${process.pid}`.slice(0, 63),
    );
    if (this.#closed) {
      // close() ran while the session was being opened: it must not outlive the lease.
      await session.end();
      throw new LeaseLostError('the node lease is closed');
    }
    session.onLost((err) => {
      if (this.#session !== session) return;
      this.#session = undefined;
      this.#held.clear();
      clearInterval(this.#heartbeat);
      if (!this.#closed) this.#opts.onLost?.(err);
    });
    const listen = this.#opts.listen ?? {};
    session.onNotification((channel, payload) => listen[channel]?.(payload));
    for (const channel of Object.keys(listen)) await session.query(`LISTEN ${channel}`);
    this.#session = session;
    this.#aliveAt = performance.now();
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => void this.#beat().catch(() => undefined), this.#heartbeatMs);
    this.#heartbeat.unref();
    return session;
  }

  async #beat(): Promise<void> {
    const session = this.#session;
    if (session === undefined || session.lost) throw new LeaseLostError('no lease session');
    const started = performance.now();
    await session.query('SELECT 1');
    if (this.#session === session) this.#aliveAt = started;
  }

  #key(name: string): LockKey {
    return advisoryLockKey(this.#db.schema, name);
  }
}

/**
 * The 64-bit advisory lock key of lock `name` in `schema` (the first 8 bytes of a SHA-256), with
 * the two halves pg_locks shows it as. Exported for what inspects or holds a node's locks from
 * outside (tests, the bench).
 */
export function advisoryLockKey(schema: string, name: string): LockKey {
  const digest = createHash('sha256').update(`${schema}\0${name}`).digest();
  return { key: digest.readBigInt64BE(0).toString(), classid: digest.readUInt32BE(0), objid: digest.readUInt32BE(4) };
}

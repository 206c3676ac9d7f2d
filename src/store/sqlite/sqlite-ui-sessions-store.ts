/** Server-side UI sessions in `ui.db`, keyed by the SHA-256 of the cookie value (revocable at once). */
import type { Awaitable } from '../../common/awaitable.js';
import type { Db } from './db.js';

export interface UiSessionRow {
  readonly idHash: string;
  readonly userId: number;
  readonly createdAtMs: number;
  readonly lastSeenMs: number;
}

/** A row of `ui_sessions` as either database returns it. */
export interface UiSessionRecord {
  id_hash: string;
  user_id: number;
  created_at_ms: number;
  last_seen_ms: number;
}

export const UI_SESSION_COLUMNS = 'id_hash, user_id, created_at_ms, last_seen_ms';

export const toUiSession = (r: UiSessionRecord): UiSessionRow => ({
  idHash: r.id_hash,
  userId: r.user_id,
  createdAtMs: r.created_at_ms,
  lastSeenMs: r.last_seen_ms,
});

/** The storage contract (store/contracts.ts): implemented here and in store/pg/. */
export interface UiSessionsStore {
  /** A taken id hash or an unknown user is refused (throws). */
  insert(s: UiSessionRow): Awaitable<void>;
  get(idHash: string): Awaitable<UiSessionRow | undefined>;
  /** Marks the session used at `nowMs`; nothing happens for an unknown one. */
  touch(idHash: string, nowMs: number): Awaitable<void>;
  delete(idHash: string): Awaitable<void>;
  /** Ends every session of a user (disabled, or password changed); how many ended. */
  deleteForUser(userId: number): Awaitable<number>;
  /** Drops sessions last seen before `idleBeforeMs` or created before `createdBeforeMs`; how many. */
  deleteExpired(idleBeforeMs: number, createdBeforeMs: number): Awaitable<number>;
  /**
   * The installation's CSRF signing key: the first caller's `make()` is stored and every caller, on
   * every process or node, gets that one key back (concurrent first callers agree).
   */
  csrfKey(make: () => string): Awaitable<string>;
}

export class SqliteUiSessionsStore implements UiSessionsStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  insert(s: UiSessionRow): void {
    this.#db
      .prepare('INSERT INTO ui_sessions (id_hash, user_id, created_at_ms, last_seen_ms) VALUES (?, ?, ?, ?)')
      .run(s.idHash, s.userId, s.createdAtMs, s.lastSeenMs);
  }

  get(idHash: string): UiSessionRow | undefined {
    const r = this.#db.prepare(`SELECT ${UI_SESSION_COLUMNS} FROM ui_sessions WHERE id_hash = ?`).get(idHash) as
      UiSessionRecord | undefined;
    return r === undefined ? undefined : toUiSession(r);
  }

  touch(idHash: string, nowMs: number): void {
    this.#db.prepare('UPDATE ui_sessions SET last_seen_ms = ? WHERE id_hash = ?').run(nowMs, idHash);
  }

  delete(idHash: string): void {
    this.#db.prepare('DELETE FROM ui_sessions WHERE id_hash = ?').run(idHash);
  }

  /** Ends every session of a user (disabled, or password changed). */
  deleteForUser(userId: number): number {
    return this.#db.prepare('DELETE FROM ui_sessions WHERE user_id = ?').run(userId).changes;
  }

  /** Drops sessions past either timeout. */
  deleteExpired(idleBeforeMs: number, createdBeforeMs: number): number {
    return this.#db
      .prepare('DELETE FROM ui_sessions WHERE last_seen_ms < ? OR created_at_ms < ?')
      .run(idleBeforeMs, createdBeforeMs).changes;
  }

  /** The installation's CSRF signing key, made once (by whichever process gets there first) and shared by every process. */
  csrfKey(make: () => string): string {
    this.#db.prepare('INSERT INTO ui_secret (id, csrf_hmac_key) VALUES (1, ?) ON CONFLICT (id) DO NOTHING').run(make());
    return (this.#db.prepare('SELECT csrf_hmac_key AS k FROM ui_secret WHERE id = 1').get() as { k: string }).k;
  }
}

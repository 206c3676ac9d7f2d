/** Server-side UI sessions in `ui.db`, keyed by the SHA-256 of the cookie value (revocable at once). */
import type { Db } from './db.js';
import {
  type UiSessionRow,
  type UiSessionRecord,
  UI_SESSION_COLUMNS,
  toUiSession,
  type UiSessionsStore,
} from '../contracts/index.js';

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

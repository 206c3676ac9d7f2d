/** Server-side UI sessions and the CSRF key in the PostgreSQL store (contract and row shape: store/contracts/ui-sessions.ts). */
import type { PgTx } from './pg-db.js';
import {
  toUiSession,
  UI_SESSION_COLUMNS,
  type UiSessionRecord,
  type UiSessionRow,
  type UiSessionsStore,
} from '../contracts/index.js';

export class PgUiSessionsStore implements UiSessionsStore {
  constructor(private readonly db: PgTx) {}

  async insert(s: UiSessionRow): Promise<void> {
    await this.db.query(`INSERT INTO ui_sessions (${UI_SESSION_COLUMNS}) VALUES ($1, $2, $3, $4)`, [
      s.idHash,
      s.userId,
      s.createdAtMs,
      s.lastSeenMs,
    ]);
  }

  async get(idHash: string): Promise<UiSessionRow | undefined> {
    const r = await this.db.query<UiSessionRecord>(`SELECT ${UI_SESSION_COLUMNS} FROM ui_sessions WHERE id_hash = $1`, [
      idHash,
    ]);
    return r.rows[0] === undefined ? undefined : toUiSession(r.rows[0]);
  }

  async touch(idHash: string, nowMs: number): Promise<void> {
    await this.db.query('UPDATE ui_sessions SET last_seen_ms = $1 WHERE id_hash = $2', [nowMs, idHash]);
  }

  async delete(idHash: string): Promise<void> {
    await this.db.query('DELETE FROM ui_sessions WHERE id_hash = $1', [idHash]);
  }

  async deleteForUser(userId: number): Promise<number> {
    return (await this.db.query('DELETE FROM ui_sessions WHERE user_id = $1', [userId])).rowCount ?? 0;
  }

  async deleteExpired(idleBeforeMs: number, createdBeforeMs: number): Promise<number> {
    return (
      (
        await this.db.query('DELETE FROM ui_sessions WHERE last_seen_ms < $1 OR created_at_ms < $2', [
          idleBeforeMs,
          createdBeforeMs,
        ])
      ).rowCount ?? 0
    );
  }

  async csrfKey(make: () => string): Promise<string> {
    // A concurrent first caller's INSERT waits for the winner's commit and then does nothing. The
    // winner's key is read by a second statement: one statement's snapshot, taken before that wait,
    // would not see it.
    const mine = await this.db.query<{ k: string }>(
      'INSERT INTO ui_secret (id, csrf_hmac_key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING csrf_hmac_key AS k',
      [make()],
    );
    if (mine.rows[0] !== undefined) return mine.rows[0].k;
    return (await this.db.query<{ k: string }>('SELECT csrf_hmac_key AS k FROM ui_secret WHERE id = 1')).rows[0]!.k;
  }
}

/** The management UI sessions contract. */
import type { Awaitable } from '../../common/awaitable.js';

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

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
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

/** Management UI accounts in `ui.db`: username, role, scrypt hash, disabled flag. */
import type { Db } from './db.js';

export type UiRole = 'sysadmin' | 'support' | 'developer';

export interface UiUser {
  readonly id: number;
  readonly username: string;
  readonly role: UiRole;
  readonly disabled: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

interface Row {
  id: number;
  username: string;
  role: UiRole;
  password_hash: string;
  disabled: number;
  created_at: string;
  updated_at: string;
}

const toUser = (r: Row): UiUser => ({ id: r.id, username: r.username, role: r.role, disabled: r.disabled === 1, createdAt: r.created_at, updatedAt: r.updated_at });

export class UiUsersRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  count(): number {
    return (this.#db.prepare('SELECT count(*) AS n FROM ui_users').get() as { n: number }).n;
  }

  /** Inserts a user; false when the username is taken (nothing written). */
  insert(u: { username: string; role: UiRole; passwordHash: string; at: string }): UiUser | undefined {
    const r = this.#db
      .prepare('INSERT INTO ui_users (username, role, password_hash, disabled, created_at, updated_at) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (username) DO NOTHING')
      .run(u.username, u.role, u.passwordHash, u.at, u.at);
    return r.changes === 0 ? undefined : this.byId(Number(r.lastInsertRowid));
  }

  /** Inserts the first user only while the table is empty (bootstrap); atomic against another process. */
  insertIfNone(u: { username: string; role: UiRole; passwordHash: string; at: string }): UiUser | undefined {
    return this.#db.transaction(() => (this.count() === 0 ? this.insert(u) : undefined)).immediate();
  }

  byId(id: number): UiUser | undefined {
    const r = this.#db.prepare('SELECT * FROM ui_users WHERE id = ?').get(id) as Row | undefined;
    return r === undefined ? undefined : toUser(r);
  }

  /** The user and their stored hash, for a login. */
  credentials(username: string): { user: UiUser; passwordHash: string } | undefined {
    const r = this.#db.prepare('SELECT * FROM ui_users WHERE username = ?').get(username) as Row | undefined;
    return r === undefined ? undefined : { user: toUser(r), passwordHash: r.password_hash };
  }

  list(): UiUser[] {
    return (this.#db.prepare('SELECT * FROM ui_users ORDER BY username').all() as Row[]).map(toUser);
  }

  /** True when the flag changed. */
  setDisabled(username: string, disabled: boolean, at: string): boolean {
    return this.#db.prepare('UPDATE ui_users SET disabled = ?, updated_at = ? WHERE username = ? AND disabled <> ?').run(disabled ? 1 : 0, at, username, disabled ? 1 : 0).changes > 0;
  }

  /** True when the user exists. */
  setPasswordHash(username: string, passwordHash: string, at: string): boolean {
    return this.#db.prepare('UPDATE ui_users SET password_hash = ?, updated_at = ? WHERE username = ?').run(passwordHash, at, username).changes > 0;
  }
}

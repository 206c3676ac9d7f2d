/** Management UI accounts in the PostgreSQL store (the contract and the row shape: store/contracts/ui-users.ts). */
import type { PgDb, PgTx } from './pg-db.js';
import {
  toUiUser,
  uiCredentials,
  type NewUiUser,
  type UiUser,
  type UiUserRecord,
  type UiUsersStore,
} from '../contracts/index.js';

const COLUMNS = 'id, username, role, password_hash, disabled, created_at, updated_at';

/** Undefined when the username is taken; any other refusal (a role the CHECK rejects) throws. */
async function insertUser(db: PgTx, u: NewUiUser): Promise<UiUser | undefined> {
  const r = await db.query<UiUserRecord>(
    `INSERT INTO ui_users (username, role, password_hash, disabled, created_at, updated_at) VALUES ($1, $2, $3, false, $4, $4)
     ON CONFLICT (username) DO NOTHING RETURNING ${COLUMNS}`,
    [u.username, u.role, u.passwordHash, u.at],
  );
  return r.rows[0] === undefined ? undefined : toUiUser(r.rows[0]);
}

export class PgUiUsersStore implements UiUsersStore {
  constructor(private readonly db: PgDb) {}

  async count(): Promise<number> {
    return (await this.db.query<{ n: number }>('SELECT count(*) AS n FROM ui_users')).rows[0]!.n;
  }

  async insert(u: NewUiUser): Promise<UiUser | undefined> {
    return insertUser(this.db, u);
  }

  async insertIfNone(u: NewUiUser): Promise<UiUser | undefined> {
    return this.db.transaction(async (tx) => {
      // Under READ COMMITTED two nodes could both count zero and both insert. SHARE ROW EXCLUSIVE
      // conflicts with itself and with the ROW EXCLUSIVE of every INSERT, so bootstraps queue behind
      // each other and behind a plain insert, as SQLite's IMMEDIATE transaction does; reads go on.
      // The count that follows takes its snapshot after the lock, so it sees whatever committed first.
      await tx.query('LOCK TABLE ui_users IN SHARE ROW EXCLUSIVE MODE');
      const n = (await tx.query<{ n: number }>('SELECT count(*) AS n FROM ui_users')).rows[0]!.n;
      return n === 0 ? insertUser(tx, u) : undefined;
    });
  }

  async byId(id: number): Promise<UiUser | undefined> {
    const r = await this.db.query<UiUserRecord>(`SELECT ${COLUMNS} FROM ui_users WHERE id = $1`, [id]);
    return r.rows[0] === undefined ? undefined : toUiUser(r.rows[0]);
  }

  async credentials(username: string): Promise<{ user: UiUser; passwordHash: string } | undefined> {
    const r = await this.db.query<UiUserRecord>(`SELECT ${COLUMNS} FROM ui_users WHERE username = $1`, [username]);
    return r.rows[0] === undefined ? undefined : uiCredentials(r.rows[0]);
  }

  async list(): Promise<UiUser[]> {
    return (
      await this.db.query<UiUserRecord>(`SELECT ${COLUMNS} FROM ui_users ORDER BY username COLLATE "C"`)
    ).rows.map(toUiUser);
  }

  async setDisabled(username: string, disabled: boolean, at: string): Promise<boolean> {
    const r = await this.db.query(
      'UPDATE ui_users SET disabled = $1, updated_at = $2 WHERE username = $3 AND disabled <> $1',
      [disabled, at, username],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async setPasswordHash(username: string, passwordHash: string, at: string): Promise<boolean> {
    const r = await this.db.query('UPDATE ui_users SET password_hash = $1, updated_at = $2 WHERE username = $3', [
      passwordHash,
      at,
      username,
    ]);
    return (r.rowCount ?? 0) > 0;
  }
}

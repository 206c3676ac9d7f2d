/** The management UI accounts contract. */
import type { Awaitable } from '../../common/awaitable.js';

export type UiRole = 'sysadmin' | 'support' | 'developer';

export interface UiUser {
  readonly id: number;
  readonly username: string;
  readonly role: UiRole;
  readonly disabled: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** A row of `ui_users` as either database returns it: SQLite's flag is 0/1, PostgreSQL's a boolean. */
export interface UiUserRecord {
  id: number;
  username: string;
  role: UiRole;
  password_hash: string;
  disabled: number | boolean;
  created_at: string;
  updated_at: string;
}

export const toUiUser = (r: UiUserRecord): UiUser => ({
  id: r.id,
  username: r.username,
  role: r.role,
  disabled: r.disabled === 1 || r.disabled === true,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** What a login reads: the user and their stored hash. */
export const uiCredentials = (r: UiUserRecord): { user: UiUser; passwordHash: string } => ({
  user: toUiUser(r),
  passwordHash: r.password_hash,
});

/** A new account as the doors hand it over (the hash already made). */
export interface NewUiUser {
  readonly username: string;
  readonly role: UiRole;
  readonly passwordHash: string;
  readonly at: string;
}

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface UiUsersStore {
  count(): Awaitable<number>;
  /** Inserts a user; undefined when the username is taken (nothing written). */
  insert(u: NewUiUser): Awaitable<UiUser | undefined>;
  /**
   * Inserts the first user only while the table is empty (bootstrap); atomic against every other
   * process or node: of several concurrent callers on an empty store exactly one creates an account.
   */
  insertIfNone(u: NewUiUser): Awaitable<UiUser | undefined>;
  byId(id: number): Awaitable<UiUser | undefined>;
  /** The user and their stored hash, for a login; a disabled user is returned too (with the flag set). */
  credentials(username: string): Awaitable<{ user: UiUser; passwordHash: string } | undefined>;
  /** Every user, by username in byte order. */
  list(): Awaitable<UiUser[]>;
  /** True when the flag changed. */
  setDisabled(username: string, disabled: boolean, at: string): Awaitable<boolean>;
  /** True when the user exists. */
  setPasswordHash(username: string, passwordHash: string, at: string): Awaitable<boolean>;
}

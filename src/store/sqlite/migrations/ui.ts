/** Schema of the management UI's database (`ui.db`): accounts and server-side sessions. */
import type { Migration } from '../db.js';

export const uiMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts and sessions',
    sql: `
      CREATE TABLE ui_users (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        username TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL CHECK (role IN ('sysadmin', 'support', 'developer')),
        password_hash TEXT NOT NULL,         -- scrypt$N$r$p$salt$hash (base64url); never the password
        disabled INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE ui_sessions (
        id_hash TEXT PRIMARY KEY,            -- hex SHA-256 of the cookie value; the value itself is never stored
        user_id INTEGER NOT NULL REFERENCES ui_users(id),
        created_at_ms INTEGER NOT NULL,
        last_seen_ms INTEGER NOT NULL
      );
      CREATE INDEX ui_sessions_user ON ui_sessions(user_id);
      CREATE TABLE ui_secret (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        csrf_hmac_key TEXT NOT NULL           -- base64url; signs the forms' CSRF tokens in every process
      );
    `,
  },
];

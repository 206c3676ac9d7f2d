/**
 * Opens the store an operator command works on, from `--db` (the SQLite state directory) or from
 * `--store` (the PostgreSQL store: opened once, its schema migrated), and closes it whatever
 * happens. The commands take what they need from it, as their contracts, and work the same on both.
 */
import { statePaths } from '../common/paths.js';
import { openStore, type OpenedStore, type OpenStoreOptions } from '../storage/index.js';
import { parseStoreUrl } from '../store/pg/store-url.js';
import type { StoreFlags } from './options.js';

/** A command's PostgreSQL connections: a few, so that several commands and servers share the server's limit. */
const CLI_PG = { maxConnections: 4, applicationName: 'svc-cli' } as const;

/**
 * Runs `fn` with the store of `target` open, closing it after `fn` settles. On a state directory
 * each database is opened (created, migrated) only when `fn` first uses it; with `readOnly` a
 * missing one reads as empty and is not created.
 */
export async function withStore<T>(
  target: StoreFlags,
  fn: (store: OpenedStore) => Promise<T> | T,
  opts: Omit<OpenStoreOptions, 'pg'> = {},
): Promise<T> {
  const store = await openStore(target.store ?? target.db, { ...opts, pg: CLI_PG });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Where the registry of a command is, for messages (without opening it): the registry file, or the store URL without its password. */
export function registryLocation(target: StoreFlags): string {
  return target.store === undefined ? statePaths(target.db).registryDb : parseStoreUrl(target.store).redacted;
}

/**
 * The stores of `svc serve`, and of a command that runs flows as the server does (`svc seed`): the
 * state directory of `--db` (serve/stores.ts), or the PostgreSQL store of `--store`
 * (serve/pg-stores.ts).
 */
import type { Logger } from '../common/logger.js';
import type { StatePaths } from '../common/paths.js';
import type { Closers } from './closers.js';
import type { PgServeOptions } from './pg-stores.js';
import { openStores, type ServeStores, type WriterHooks } from './stores.js';

/** Opens every store of `store` when given, else of the state directory of `paths`; each is closed by `closers`. */
export async function openServeStores(
  paths: StatePaths,
  store: string | undefined,
  log: Logger,
  closers: Closers,
  hooks?: WriterHooks,
  opts: PgServeOptions = {},
): Promise<ServeStores> {
  if (store === undefined) return openStores(paths, log, closers, hooks);
  // Loaded only for a store: a command on the state directory does not load the PostgreSQL client.
  const { openPgStores } = await import('./pg-stores.js');
  return openPgStores(store, log, closers, hooks, opts);
}

/**
 * A flow-state store that lives in memory only (`svc test`): the registry's own SQLite schema and
 * the SQLite implementation of FlowStateStore, on a `:memory:` database, so an example's
 * deduplication and correlations behave as the service's do, and nothing reaches the disk.
 */
import type { FlowStateStore } from '../store/contracts/index.js';
import { openDb } from '../store/sqlite/db.js';
import { registryMigrations } from '../store/sqlite/migrations/registry.js';
import { SqliteFlowStateStore } from '../store/sqlite/sqlite-flow-state-store.js';

export interface ScratchFlowState {
  readonly store: FlowStateStore;
  close(): void;
}

/** A new, empty store; close() drops it. */
export function openScratchFlowState(): ScratchFlowState {
  const db = openDb(':memory:', registryMigrations);
  return { store: new SqliteFlowStateStore(db), close: () => db.close() };
}

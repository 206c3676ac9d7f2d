/** The storage layer: what other layers import to open a state directory or a PostgreSQL store. */
export {
  openStore,
  type ClusterStore,
  type OpenedStore,
  type OpenStoreOptions,
  type PgStores,
  type QueueOptions,
  type SqliteStores,
  type StorePart,
  type Stores,
} from './open-store.js';
export { openScratchFlowState, type ScratchFlowState } from './scratch-flow-state.js';

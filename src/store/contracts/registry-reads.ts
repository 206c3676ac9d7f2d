/** The request path's synchronous registry reads, kept in memory by each backend (RegistryCache, PgRegistryMirror). */
import type { Awaitable } from '../../common/awaitable.js';
import type { SettingName } from '../../common/settings.js';
import type { FlowVersionRef } from './artifacts.js';
import type { ApiKeyRow } from './keys.js';
import type { Tenant } from './tenants.js';

/**
 * The registry reads of the request path, answered at once from memory: by RegistryCache over the
 * SQLite registry, by PgRegistryMirror (store/pg/) over PostgreSQL. A throw means the answer cannot
 * be vouched for now (the gate's 503, never a pass).
 */
export interface RegistryReads {
  findKeyByHash(hash: string): ApiKeyRow | undefined;
  tenant(id: string): Tenant | undefined;
  resolveLatest(tenant: string, name: string): FlowVersionRef | undefined;
  traceEnabled(tenant: string, flow: string): boolean;
  setting(name: SettingName): number;
  /** After a write through this process: the next read must see it. */
  invalidate(): void;
  /**
   * Settles once the reads answer with every write committed before the call, made through any
   * connection (`svc seed` publishes through the stores, then runs the flows through this copy):
   * at once on SQLite, after one round of the change log on PostgreSQL.
   */
  refresh(): Awaitable<void>;
  close(): void;
}

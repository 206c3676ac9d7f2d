/**
 * `svc serve --store postgres://...` opened: every store on the shared PostgreSQL database (the
 * schema migrated first, a newer one refused), the request path's registry reads from memory kept
 * current by the change log (PgRegistryMirror), the event log and the audit trail written in
 * batches. Nothing of the service's state is on this node's disk.
 */
import { FlowLoader } from '../app/runtime/flow-loader.js';
import { LogThrottle } from '../common/log-throttle.js';
import type { Logger } from '../common/logger.js';
import type { SettingName } from '../common/settings.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { EventLog } from '../store/event-log/event-log.js';
import { PgAuditWriter } from '../store/audit/pg-audit-writer.js';
import { PgRegistryMirror } from '../store/pg/pg-registry-mirror.js';
import { openPgStore } from '../store/pg/pg-store.js';
import type { Closers } from './closers.js';
import type { ServeStores, WriterHooks } from './stores.js';

/** Connections of one node: requests' flow state, the workers, the writers, the UI. */
const POOL_CONNECTIONS = 16;

export interface PgServeOptions {
  /** Directory of this node's daily JSON Lines files of the event log. @default none */
  readonly logFilesDir?: string;
}

export async function openPgStores(
  url: string,
  log: Logger,
  closers: Closers,
  hooks: WriterHooks | undefined,
  opts: PgServeOptions = {},
): Promise<ServeStores> {
  const throttle = new LogThrottle(10_000);
  const pg = await openPgStore(url, {
    maxConnections: POOL_CONNECTIONS,
    applicationName: 'svc',
    // A transaction this node leaves open while paused or cut off (its row locks hold up every node) ends with its lease.
    idleInTransactionTimeoutMs: housekeepingIntervals().nodeLeaseMs,
    onIdleError: (err) => {
      const ok = throttle.admit('idle');
      if (ok)
        log.warn(
          { err: err.message, held_back: ok.heldBack },
          'a PostgreSQL connection was lost (the pool replaces it)',
        );
    },
  });
  // Closed last (closers run in reverse): every writer below flushes through it first.
  closers.add(() => pg.close());
  const cache = await PgRegistryMirror.open(pg.db, {
    onError: (err) => {
      const ok = throttle.admit('mirror');
      if (ok)
        log.error(
          { err: (err as Error).message, held_back: ok.heldBack },
          'the registry copy could not be refreshed from PostgreSQL (requests answer 503 while it is stale)',
        );
    },
  });
  closers.add(() => cache.close());
  const setting = (name: SettingName) => cache.setting(name);
  const flows = new FlowLoader(cache, (tenant, name) => cache.resolveLatest(tenant, name));
  const events = new EventLog({
    pg: pg.db,
    logsDir: opts.logFilesDir,
    flushIntervalMs: 100,
    maxBatchRows: 4096,
    payloadMaxBytes: () => setting('log_payload_max_bytes'),
    onError: (err) => log.error({ err }, 'event log write failed'),
    onBatchWritten: hooks?.eventBatchWritten,
  });
  closers.add(() => events.close());
  const audit = new PgAuditWriter(pg.db, {
    flushIntervalMs: 100,
    onError: (message) => log.error(message),
    onBatchWritten: hooks?.auditBatchWritten,
  });
  closers.add(() => audit.close());
  return {
    kind: 'postgres',
    registry: undefined,
    settings: pg.settings,
    tenants: pg.tenants,
    keys: pg.keys,
    artifacts: pg.artifacts,
    traces: pg.traces,
    certificates: pg.certificates,
    cache,
    descriptorReads: cache,
    flows,
    flowState: pg.flowState,
    events,
    audit,
    auditRepo: pg.audit,
    tenantAdmin: pg.tenantAdmin,
    logRepo: pg.events,
    uiUsers: pg.uiUsers,
    uiSessions: pg.uiSessions,
    pg: pg.db,
    setting,
  };
}

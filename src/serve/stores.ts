/**
 * The stores `svc serve` runs on, opened through openStore (storage/): the state directory of
 * `--db` or the PostgreSQL store of `--store`. What only a server needs is built here on top: the
 * request path's registry reads from memory, the flow loader, and the batching event-log and
 * audit writers.
 */
import { mkdirSync } from 'node:fs';
import { FlowLoader } from '../app/runtime/flow-loader.js';
import { LogThrottle } from '../common/log-throttle.js';
import type { Logger } from '../common/logger.js';
import type { StatePaths } from '../common/paths.js';
import type { SettingName } from '../common/settings.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { openStore, type OpenedStore, type PgStores, type SqliteStores, type Stores } from '../storage/index.js';
import { recoverAuditSpools } from '../store/audit/audit-spool.js';
import { AuditThreadWriter, type AuditAppender } from '../store/audit/audit-thread.js';
import { PgAuditWriter } from '../store/audit/pg-audit-writer.js';
import type { AuditStore, DescriptorReads, EventLogStore, RegistryReads } from '../store/contracts/index.js';
import { EventLog } from '../store/event-log/event-log.js';
import { PgRegistryMirror } from '../store/pg/pg-registry-mirror.js';
import { RegistryCache } from '../store/sqlite/registry-cache.js';
import type { Closers } from './closers.js';

/** How often a server chains what stopped processes left in their audit spools. Milliseconds. */
const SPOOL_SWEEP_MS = 10_000;

/** The opened store's aggregates a server hands on as they are (the rest it wraps: see ServeStores). */
const SHARED_STORES = [
  'settings',
  'tenants',
  'keys',
  'artifacts',
  'traces',
  'certificates',
  'flowState',
  'tenantAdmin',
  'uiUsers',
  'uiSessions',
] as const;
type SharedStores = Pick<Stores, (typeof SHARED_STORES)[number]>;

/** Read once at start: the request path then reads plain properties. */
function sharedStores(opened: Stores): SharedStores {
  return Object.fromEntries(SHARED_STORES.map((name) => [name, opened[name]])) as unknown as SharedStores;
}

/**
 * The stores `svc serve` runs on, whichever database holds them: the opened store's aggregates
 * behind their contracts (store/contracts/), and the request path's reads from memory (`cache`,
 * `flows`, `descriptorReads`).
 */
export interface ServeStores extends SharedStores {
  readonly kind: 'sqlite' | 'postgres';
  /** The opened store: the queue backend, and on PostgreSQL the pool the cluster's locks use. */
  readonly opened: OpenedStore;
  /** Keys, tenants, `latest`, trace flags and settings from memory, revalidated by a change signal. */
  readonly cache: RegistryReads;
  /** Latest artifacts, verified and parsed once per hash. */
  readonly flows: FlowLoader;
  /** The batching event-log writer. */
  readonly events: EventLog;
  /** The batching audit writer. */
  readonly audit: AuditAppender & { readonly queuedEntries: number };
  /** The audit chains read and appended in-line (the UI's changes and its Audit page). */
  readonly auditRepo: AuditStore;
  /** The event log's read side (the UI). Retention runs on the writer (`events`). */
  readonly logRepo: EventLogStore;
  /**
   * The latest descriptors, read synchronously (the gRPC door): the SQLite repository, revalidated
   * by the file's change counter, or the node's copy of the PostgreSQL registry.
   */
  readonly descriptorReads: DescriptorReads;
  /** A platform setting as the registry holds it now (cached). */
  setting(name: SettingName): number;
}

/** Told of each writer batch (metrics). */
export interface WriterHooks {
  eventBatchWritten(rows: number, seconds: number): void;
  auditBatchWritten(entries: number, seconds: number): void;
}

export interface ServeStoreOptions {
  /** PostgreSQL: directory of this node's daily JSON Lines files of the event log. @default none */
  readonly logFilesDir?: string;
}

/** Connections of one node: requests' flow state, the workers, the writers, the UI. */
const POOL_CONNECTIONS = 16;

/**
 * Opens (and migrates) every store of `store` when given, else of the state directory of `paths`;
 * each part is closed by `closers` in reverse order (the opened store last: every writer flushes
 * through it first).
 */
export async function openServeStores(
  paths: StatePaths,
  store: string | undefined,
  log: Logger,
  closers: Closers,
  hooks?: WriterHooks,
  opts: ServeStoreOptions = {},
): Promise<ServeStores> {
  if (store === undefined)
    for (const dir of [paths.stateDir, paths.queuesDir, paths.logsDir]) mkdirSync(dir, { recursive: true });
  const throttle = new LogThrottle(10_000);
  const leaseMs = housekeepingIntervals().nodeLeaseMs;
  const opened = await openStore(store ?? paths.registryDb, {
    pg: {
      maxConnections: POOL_CONNECTIONS,
      applicationName: 'svc',
      // A transaction this node leaves open while paused or cut off (its row locks hold up every node) ends with its lease.
      idleInTransactionTimeoutMs: leaseMs,
      onIdleError: (err) => {
        const ok = throttle.admit('idle');
        if (ok)
          log.warn(
            { err: err.message, held_back: ok.heldBack },
            'a PostgreSQL connection was lost (the pool replaces it)',
          );
      },
    },
    queues: {
      lease: { leaseMs, heartbeatMs: Math.min(1000, Math.floor(leaseMs / 4)) },
      onLeaseLost: (err) =>
        log.warn(
          { err: err.message },
          'the node lease session was lost: this node stopped its queue workers; they are taken over (here or on another node) once a lease is held again',
        ),
    },
  });
  closers.add(() => opened.close());
  return opened.kind === 'sqlite'
    ? serveStateDir(opened, paths, log, closers, hooks)
    : servePg(opened, log, closers, hooks, throttle, opts);
}

function serveStateDir(
  opened: SqliteStores,
  paths: StatePaths,
  log: Logger,
  closers: Closers,
  hooks: WriterHooks | undefined,
): ServeStores {
  const { registry, artifacts, settings, tenants, keys, traces } = opened;
  // Opened (and migrated) before the audit writer thread starts, so a broken audit database stops the start.
  const auditRepo = opened.audit;
  const cache = new RegistryCache(registry, { keys, tenants, artifacts, traces, settings });
  closers.add(() => cache.close());
  const setting = (name: SettingName) => cache.setting(name);
  const flows = new FlowLoader(artifacts, (tenant, name) => cache.resolveLatest(tenant, name));

  const events = EventLog.open(paths, eventLogTuning(log, hooks, setting, SQLITE_EVENT_BATCH_ROWS));
  closers.add(() => events.close());
  // What a process that died left spooled is chained before this one appends (then every
  // SPOOL_SWEEP_MS: a sibling of --processes may die while this one runs).
  const sweepSpools = (sweepMarks: boolean) => {
    const found = recoverAuditSpools(paths.auditSpoolDir, auditRepo, sweepMarks);
    if (found.spools > 0)
      log.warn(
        { spools: found.spools, entries: found.entries },
        `audit: chained ${found.entries} entries left spooled by ${found.spools} stopped process(es)`,
      );
  };
  sweepSpools(true);
  const sweep = setInterval(() => {
    try {
      sweepSpools(false);
    } catch (err) {
      log.error({ err }, 'audit: spools of stopped processes not chained yet (trying again)');
    }
  }, SPOOL_SWEEP_MS).unref();
  closers.add(() => clearInterval(sweep));
  const audit = new AuditThreadWriter(paths.auditDb, {
    ...auditWriterTuning(log, hooks),
    spoolDir: paths.auditSpoolDir,
  });
  closers.add(() => audit.close());
  const logRepo = opened.eventLog;
  logRepo.tuneForScans();
  return {
    kind: 'sqlite',
    opened,
    ...sharedStores(opened),
    cache,
    flows,
    events,
    audit,
    auditRepo,
    logRepo,
    descriptorReads: opened.descriptors,
    setting,
  };
}

/** Nothing of the service's state is on this node's disk: the registry read from a copy kept current by the change log. */
async function servePg(
  opened: PgStores,
  log: Logger,
  closers: Closers,
  hooks: WriterHooks | undefined,
  throttle: LogThrottle,
  opts: ServeStoreOptions,
): Promise<ServeStores> {
  const cache = await PgRegistryMirror.open(opened.db, {
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
    pg: opened.db,
    logsDir: opts.logFilesDir,
    ...eventLogTuning(log, hooks, setting, PG_EVENT_BATCH_ROWS),
  });
  closers.add(() => events.close());
  const audit = new PgAuditWriter(opened.db, auditWriterTuning(log, hooks));
  closers.add(() => audit.close());
  return {
    kind: 'postgres',
    opened,
    ...sharedStores(opened),
    cache,
    descriptorReads: cache,
    flows,
    events,
    audit,
    auditRepo: opened.audit,
    logRepo: opened.eventLog,
    setting,
  };
}

/**
 * log.db's batches: every 100 ms or 1024 rows. Under load a batch is cut by its rows, and its commit
 * is a burst of the writer thread's CPU (about 2.7 us a row) that the request path's thread and
 * the load on the same two cores wait behind: at 4096 rows, an 11 ms burst every 44 ms put /run's
 * p99 at 4.0 to 4.2 ms against 2.9 to 3.4 ms at 1024 rows (wrk, 50 connections, about 47k req/s,
 * session 30), for 0.3 to 0.6 us more of the writer's CPU a request (four times the commits).
 */
const SQLITE_EVENT_BATCH_ROWS = 1024;
/** PostgreSQL's: every 100 ms or 4096 rows, as before (the 1024-row cut was measured on log.db only). */
const PG_EVENT_BATCH_ROWS = 4096;

/** How a node batches its event-log rows, on either store: every 100 ms or `maxBatchRows` rows. */
function eventLogTuning(
  log: Logger,
  hooks: WriterHooks | undefined,
  setting: (name: SettingName) => number,
  maxBatchRows: number,
) {
  return {
    flushIntervalMs: 100,
    maxBatchRows,
    payloadMaxBytes: () => setting('log_payload_max_bytes'),
    onError: (err: unknown) => log.error({ err }, 'event log write failed'),
    onBatchWritten: hooks?.eventBatchWritten,
  };
}

/** How a node batches its audit entries, on either store. */
function auditWriterTuning(log: Logger, hooks: WriterHooks | undefined) {
  return {
    flushIntervalMs: 100,
    onError: (message: string) => log.error(message),
    onBatchWritten: hooks?.auditBatchWritten,
  };
}

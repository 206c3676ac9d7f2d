/**
 * `svc serve`, the composition root: opens the state directory, builds the executor, the queues,
 * the gate and the doors, starts the timers, and stops them all once, in reverse order.
 */
import { scanDeployedFlows, startupRefusals } from '../app/runtime/deployed-flows.js';
import { databasesWithoutIncrementalVacuum, vacuumCommand } from '../app/maintenance/storage-space.js';
import { bootstrapUiAdmin, type BootstrapOutcome } from '../app/accounts/ui-accounts.js';
import { markServing } from '../app/maintenance/state-users.js';
import { ExitError } from '../common/errors.js';
import { createLogger, type Logger } from '../common/logger.js';
import { statePaths, type StatePaths } from '../common/paths.js';
import { flushSpans, sdkRegistered } from '../common/trace-context/spans.js';
import { Gate } from '../gate/gate.js';
import { startRefusalRecords } from './refusals.js';
import { registryGateLookups } from '../gate/registry-lookups.js';
import { Closers } from './closers.js';
import { startGrpcDoorIfAsked, startHttpDoor } from './doors.js';
import { buildExecutor } from './executor.js';
import { startQueueSampler, startRollups } from './rollups.js';
import { bothObservers } from '../app/runtime/rollup-recorder.js';
import { buildQueues, queuePublishTarget } from './queues.js';
import { hostname } from 'node:os';
import { openServeStores } from './stores.js';
import { startCompaction, startTimers } from './timers.js';

export interface ServeOptions {
  host: string;
  port: number;
  db: string;
  grpcPort?: number;
  /** `--store`: every store on this PostgreSQL database (a cluster's nodes share it); `db` is then unused but for nothing. */
  store?: string;
  /** With `store`: write this node's daily JSON Lines files of the event log here. */
  logFilesDir?: string;
  secret?: string;
  noAuth: boolean;
  /** `--metrics`: `GET /metrics` on the main port. */
  metrics?: boolean;
  /** `--metrics-port`: `GET /metrics` on its own listener (same host) instead. */
  metricsPort?: number;
  /**
   * `--no-rollups`: count no per-minute rollups (the UI's charts and live numbers stay empty for
   * this process's deliveries); every event row and audit entry is written as ever. @default false
   */
  noRollups?: boolean;
  /** A member of a `--processes` group: the HTTP port is shared with the group's other processes (SO_REUSEPORT). */
  reusePort?: boolean;
}

/** Lifecycle: 'starting' -> 'running' -> 'stopping' -> 'stopped'; close() runs once. */
export type ServiceState = 'starting' | 'running' | 'stopping' | 'stopped';

export interface RunningService {
  readonly paths: StatePaths;
  readonly url: string;
  readonly log: Logger;
  readonly state: ServiceState;
  /** Human-readable boot lines for stdout. */
  readonly bootLines: readonly string[];
  close(): Promise<void>;
}

export async function startService(opts: ServeOptions): Promise<RunningService> {
  const log = createLogger();
  const paths = statePaths(opts.db);
  const closers = new Closers();
  try {
    return await start(opts, log, paths, closers);
  } catch (err) {
    await closers.runAll();
    throw err;
  }
}

/**
 * The boot line's address: the one bound. Bound to every interface (`0.0.0.0`, `::`), it says so
 * and adds the URL that reaches it on this machine (what Fastify answers, and what the ui line uses).
 */
export function listeningLine(host: string, local: string): string {
  if (host !== '0.0.0.0' && host !== '::') return local;
  const port = new URL(local).port;
  return `http://${host === '::' ? '[::]' : host}:${port} (every interface; on this machine ${local})`;
}

/** What an SDK rejected with: an Error, or (the SDK's batch processor) an array of them. */
function sdkFailureText(err: unknown): string {
  const one = (e: unknown) => (e instanceof Error ? e.message : String(e));
  return Array.isArray(err) ? err.map(one).join('; ') : one(err);
}

async function start(opts: ServeOptions, log: Logger, paths: StatePaths, closers: Closers): Promise<RunningService> {
  // Runs last: the spans of the executions that the doors let finish reach the SDK's exporter
  // before the process exits (svc exits by itself, so a preloaded SDK cannot flush on its own).
  // An SDK that fails its export (a 2.x-style processor on the 3.x SDK rejects each one) is the
  // operator's to mend, and the service itself closed cleanly: a warning, not a failed shutdown.
  closers.add(() =>
    flushSpans().catch((err: unknown) =>
      log.warn(
        { err: sdkFailureText(err) },
        `the OpenTelemetry SDK did not export its last spans: ${sdkFailureText(err)}`,
      ),
    ),
  );
  // prom-client and the scrape wiring are loaded only with --metrics or --metrics-port.
  const metricsParts = opts.metrics || opts.metricsPort !== undefined ? await loadMetricsParts() : undefined;
  const metrics = metricsParts?.createServiceMetrics((family, err) =>
    log.error({ err, family }, 'metrics: a scrape-time read failed'),
  );
  const stores = await openServeStores(paths, opts.store, log, closers, metrics, { logFilesDir: opts.logFilesDir });
  if (stores.kind === 'sqlite') {
    // Offline commands (svc store migrate) refuse a state directory a server uses (app/maintenance/state-users.ts).
    const marker = await markServing(paths);
    closers.add(() => marker.release());
  }

  // Start-up refusals: a registry that cannot be listed, unset config, bare credential spellings.
  const deployed = scanDeployedFlows(stores.flows);
  for (const u of deployed.unreadable)
    log.error(`unreadable flow artifact (not served until re-deployed): ${u.tenant}/${u.flow} ${u.error}`);
  const refusals = startupRefusals(deployed.flows);
  if (refusals.length > 0)
    throw new ExitError(1, `svc serve refused to start:\n${refusals.map((r) => `  - ${r}`).join('\n')}`);

  const gate = opts.noAuth
    ? undefined
    : new Gate(
        registryGateLookups(stores.cache, (tenant, flow) => stores.flows.latest(tenant, flow)),
        startRefusalRecords(stores, log, closers, metrics?.refused),
      );
  const publishTarget = queuePublishTarget();
  // Registered after the stores: its last flush runs before the event log closes.
  const rollups = opts.noRollups === true ? undefined : startRollups(stores, closers);
  const run = buildExecutor(
    stores,
    closers,
    publishTarget.effect,
    rollups === undefined ? metrics?.executions : bothObservers(metrics?.executions, rollups),
    rollups?.stepRan,
  );
  const queues = await buildQueues(stores, run, publishTarget, log, closers);
  if (metricsParts !== undefined && metrics !== undefined)
    metrics.attach(metricsParts.metricsSources(stores, queues.store, queues.workers));
  startCompaction({ stores, queueStore: queues.store, log }, closers);
  startQueueSampler(stores, { store: queues.store, waiting: () => queues.workers.waiting() }, closers, log);

  const ui = await bootstrapUiAdmin({ users: stores.uiUsers });
  const parts = {
    stores,
    gate,
    executor: run.executor,
    queues: queues.workers,
    queueStore: queues.store,
    stateDir: paths.stateDir,
    log,
  };
  const address = await startHttpDoor(
    opts,
    {
      ...parts,
      metrics: metrics && { observer: metrics.http, exposition: opts.metricsPort === undefined ? metrics : undefined },
    },
    closers,
  );
  const metricsUrl =
    metricsParts === undefined || metrics === undefined
      ? undefined
      : opts.metricsPort === undefined
        ? `${address}/metrics`
        : `${await metricsParts.startMetricsDoor(opts.host, opts.metricsPort, metrics, log, closers)}/metrics`;
  const cluster = stores.opened.cluster;
  const node = `${hostname()}:${process.pid}`;
  await startTimers(
    {
      logFilesDir: stores.kind === 'sqlite' ? paths.logsDir : opts.logFilesDir,
      coordination: queues.store.coordination,
      claimTick:
        cluster === undefined
          ? undefined
          : (tenant, flow, tickAt) => cluster.claimScheduleTick(tenant, flow, tickAt, node),
      stores,
      executor: run.executor,
      correlations: run.correlations,
      queueStore: queues.store,
      queues: queues.workers,
      flows: deployed.flows,
      log,
    },
    closers,
  );
  const grpc = await startGrpcDoorIfAsked(opts, parts, deployed, closers);

  const bootLines = [
    `svc listening on ${listeningLine(opts.host, address)}`,
    grpc ? `grpc listening on ${grpc.address}` : '  grpc:       off (--grpc-port not given)',
    ...(opts.store !== undefined
      ? [`  store:      ${stores.opened.location} (registry, audit, log, queues, ui: shared by every node on it)`]
      : [`  registry:   ${paths.registryDb}`]),
    `  ui:         ${address}/ui (${uiAccountLine(ui, await stores.uiUsers.count())})`,
    // Every database the state directory holds, so a backup of what the boot output names misses none.
    ...(opts.store !== undefined ? [] : [`  ui db:      ${paths.uiDb}`]),
    ...(opts.store !== undefined
      ? [`  log files:  ${opts.logFilesDir ?? 'off (--log-files not given)'}`]
      : [`  audit:      ${paths.auditDb}`, `  log:        ${paths.logDb}`, `  queues:     ${paths.queuesDir}`]),
    `  metrics:    ${metricsUrl ?? 'off (--metrics or --metrics-port not given)'}`,
    `  traces:     ${sdkRegistered() ? 'OpenTelemetry SDK registered: spans exported' : 'W3C traceparent propagated; no OpenTelemetry SDK registered, no spans recorded'}`,
    `  signature:  ${opts.secret ? 'ENABLED (X-Svc-Signature required on /run and /enqueue)' : 'disabled'}`,
    `  api keys:   ${opts.noAuth ? 'DISABLED (--no-auth)' : 'required'}`,
  ];
  if (opts.noAuth) log.warn('API key authentication is DISABLED (--no-auth); every route is open');
  else if (!(await stores.keys.hasAnyKey())) {
    // No bootstrap key exists by design: say how to make the first one.
    const hint =
      'no API key exists yet, so every key-protected route answers 401; create one with: svc keys create --tenant <t> --label <l>';
    bootLines.push(`  WARNING: ${hint}`);
    log.warn(hint);
  }
  // Files older than incremental auto-vacuum and too large to convert at open (store/sqlite/db.ts).
  const unconverted = stores.kind === 'sqlite' ? databasesWithoutIncrementalVacuum(paths) : [];
  if (unconverted.length > 0) {
    const files = unconverted.map((f) => `${f.path} (${(f.bytes / 1048576).toFixed(0)} MiB)`).join(', ');
    const hint = `${files}: created without incremental auto-vacuum, so space freed by retention is reused but never given back to the disk; convert offline, with svc serve stopped, with: ${vacuumCommand(paths)}`;
    bootLines.push(`  WARNING: ${hint}`);
    log.warn(hint);
  }

  let state: ServiceState = 'running';
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      state = 'stopping';
      const errors = await closers.runAll();
      state = 'stopped';
      log.flush();
      if (errors.length > 0) throw new AggregateError(errors, 'service did not stop cleanly');
    })();
    return closing;
  };
  return {
    paths,
    url: address,
    log,
    get state() {
      return state;
    },
    bootLines,
    close,
  };
}

/** What the boot output says of UI accounts (never a password). */
function uiAccountLine(outcome: BootstrapOutcome, users: number): string {
  if (outcome.created) return `account ${outcome.username} created from SVC_UI_ADMIN_USER as sysadmin`;
  if (users > 0) return `${users} account(s)`;
  return 'no account yet: set SVC_UI_ADMIN_USER and SVC_UI_ADMIN_PASS, or run svc ui user add';
}

async function loadMetricsParts() {
  const [{ createServiceMetrics }, { metricsSources, startMetricsDoor }] = await Promise.all([
    import('./metrics.js'),
    import('./metrics-wiring.js'),
  ]);
  return { createServiceMetrics, metricsSources, startMetricsDoor };
}

/** `svc serve`: opens the state directory, starts every door and background part, and stops them once. */
import type { FastifyInstance } from 'fastify';
import { mkdirSync } from 'node:fs';
import { ExitError, IntegrityError } from '../common/errors.js';
import { createLogger, type Logger } from '../common/logger.js';
import { statePaths, type StatePaths } from '../common/paths.js';
import { ExecutionLimiter, type RunDeps } from '../engine/index.js';
import { warnInboundWithoutDoor } from '../doors/grpc/inbound-warnings.js';
import { startGrpcDoor, type GrpcDoor, type GrpcDoorDeps } from '../doors/grpc/server.js';
import { createEnqueueHandler } from '../doors/http/enqueue-handler.js';
import { buildServer } from '../doors/http/server.js';
import { startQueueCompaction } from '../housekeeping/queue-compaction.js';
import { QueueStore } from '../queue/index.js';
import { Gate, type GateLookups, type GateRefusal } from '../gate/gate.js';
import { ArtifactsRepo } from '../store/artifacts-repo.js';
import { AuditThreadWriter, type AuditAppender } from '../store/audit-thread.js';
import { openDb, type Db } from '../store/db.js';
import { DescriptorsRepo } from '../store/descriptors-repo.js';
import { EventLog } from '../store/event-log.js';
import { KeysRepo } from '../store/keys-repo.js';
import { auditMigrations } from '../store/migrations/audit.js';
import { registryMigrations } from '../store/migrations/registry.js';
import { isAccepted, SettingsRepo } from '../store/settings-repo.js';
import { Settings } from '../common/settings.js';
import { TenantsRepo } from '../store/tenants-repo.js';
import { TraceRepo } from '../store/trace-repo.js';
import { scanDeployedFlows, startupRefusals } from './deployed-flows.js';
import { httpEgressEffect } from './effects.js';
import { FlowRunner } from './flow-runner.js';
import { queuePublishEffect } from './queue-publish.js';
import { QueueWorkers } from './queue-workers.js';
import { loadRef, type LoadedFlow } from './registry.js';
import { RegistryCache } from '../store/registry-cache.js';
import { Correlations, type EnqueueFn } from './correlation.js';
import { Dedup } from './dedup.js';
import { stateKeyFromEnv } from './dedup-fingerprint.js';
import { FlowStateGuard } from './dedup-guard.js';
import { Scheduler, scheduledFlows } from './scheduler.js';
import { Housekeeping } from '../housekeeping/housekeeping.js';
import { housekeepingIntervals } from '../housekeeping/intervals.js';
import { EventLogRepo } from '../store/event-log-repo.js';
import { FlowStateRepo } from '../store/flow-state-repo.js';

export interface ServeOptions {
  host: string;
  port: number;
  db: string;
  grpcPort?: number;
  secret?: string;
  noAuth: boolean;
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

/** Cleanup steps, run in reverse order of start; every one runs even when another fails. */
class Closers {
  readonly #steps: (() => unknown)[] = [];
  add(step: () => unknown): void {
    this.#steps.push(step);
  }
  async runAll(): Promise<unknown[]> {
    const errors: unknown[] = [];
    for (const step of this.#steps.reverse()) {
      try {
        await step();
      } catch (err) {
        errors.push(err);
      }
    }
    return errors;
  }
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

async function start(opts: ServeOptions, log: Logger, paths: StatePaths, closers: Closers): Promise<RunningService> {
  for (const dir of [paths.stateDir, paths.queuesDir, paths.logsDir]) mkdirSync(dir, { recursive: true });
  const registry: Db = openDb(paths.registryDb, registryMigrations);
  closers.add(() => registry.close());
  // Created and migrated here, so a broken audit database stops the start; the writer thread appends.
  openDb(paths.auditDb, auditMigrations).close();

  const artifacts = new ArtifactsRepo(registry);
  const settings = new SettingsRepo(registry);
  const tenants = new TenantsRepo(registry);
  const keys = new KeysRepo(registry);
  const traces = new TraceRepo(registry);
  const cache = new RegistryCache(registry, { keys, tenants, artifacts, traces, settings });
  closers.add(() => cache.close());
  const setting = cache.setting.bind(cache);
  const loadFlow = (tenant: string, name: string) => loadRef(artifacts, cache.resolveLatest(tenant, name));
  const traceEnabled = (tenant: string, flow: string) => cache.traceEnabled(tenant, flow);

  // Start-up refusals: a registry that cannot be listed, unset config, bare credential spellings.
  const deployed = scanDeployedFlows(artifacts);
  for (const u of deployed.unreadable) log.error(`unreadable flow artifact (not served until re-deployed): ${u.tenant}/${u.flow} ${u.error}`);
  const refusals = startupRefusals(deployed.flows);
  if (refusals.length > 0) throw new ExitError(1, `svc serve refused to start:\n${refusals.map((r) => `  - ${r}`).join('\n')}`);

  const events = EventLog.open(paths, { flushIntervalMs: 100, maxBatchRows: 4096, payloadMaxBytes: () => setting('log_payload_max_bytes'), onError: (err) => log.error({ err }, 'event log write failed') });
  closers.add(() => events.close());
  const audit = new AuditThreadWriter(paths.auditDb, { flushIntervalMs: 100, onError: (message) => log.error(message) });
  closers.add(() => audit.close());

  const gate = opts.noAuth ? undefined : new Gate(gateLookups(cache, loadFlow), { refused: (r) => recordRefusal(r, events, audit) });
  const egress = httpEgressEffect(setting);
  closers.add(() => egress.close());
  // One set of engine deps for /run, gRPC and the queue workers; queue_publish is added below,
  // once the queue workers it submits through exist.
  const engine: RunDeps = { effects: { http_egress: egress.handler }, loadFlow, events };
  // Flow state (docs/flow-state.md): dedup and correlation rows in the registry database.
  const flowState = new FlowStateRepo(registry);
  const stateKey = stateKeyFromEnv();
  const correlations = new Correlations(flowState, { stateKey });
  // An in_flight claim outlives the longest possible run by a minute before another delivery may take it.
  const dedupLeaseMs = setting('flow_max_duration_secs') * 1000 + 60_000;
  const dedup = new Dedup(flowState, { defaultWindowHours: setting('dedup_window_hours'), leaseMs: dedupLeaseMs, stateKey });
  const guard = new FlowStateGuard(dedup, correlations);
  const runner = new FlowRunner({
    guard,
    loadFlow,
    setting,
    limiter: new ExecutionLimiter(setting('max_concurrent_flow_executions')),
    events,
    traceEnabled,
    maxDurationSecs: setting('flow_max_duration_secs'),
    engine,
  });
  const queueStore = new QueueStore({ queuesDir: paths.queuesDir });
  // Closed after the HTTP door (closers run in reverse): workers stop, checkpoints are written, locks released.
  closers.add(() => queueStore.close());
  const queues = new QueueWorkers({
    store: queueStore,
    loadFlow,
    setting,
    perTenantSet: () => {
      const raw = settings.raw('max_queue_workers_per_tenant');
      return raw !== undefined && isAccepted(Settings.max_queue_workers_per_tenant, raw.trim());
    },
    events,
    audit,
    traceEnabled,
    engine,
    guard,
    maxDurationSecs: setting('flow_max_duration_secs'),
    log,
  });
  closers.add(() => queues.close());
  engine.effects = { ...engine.effects, queue_publish: queuePublishEffect(queues) };
  const compaction = startQueueCompaction({ compact: () => queueStore.compact(), intervalSecs: () => setting('queue_compaction_interval_secs'), log });
  closers.add(() => compaction.stop());

  const app: FastifyInstance = await buildServer({
    gate,
    secret: opts.secret,
    runner,
    events,
    wsdl: {
      tenantActive: (t) => cache.tenant(t)?.status === 'active',
      loadSoapConfig: (t, n) => loadFlow(t, n)?.ir.soap,
    },
    enqueue: createEnqueueHandler({ secret: opts.secret, queues, log }),
  });
  closers.add(() => app.close());
  const address = await app.listen({ host: opts.host, port: opts.port });

  // Housekeeping timers and the cron scheduler (stopped before the server and the databases close).
  // A timed-out correlation queues its compensating flow like any submission (worker started too).
  const compensatingEnqueue: EnqueueFn = (tenant, flow, m) => queues.enqueue(tenant, flow, m.payload, m.correlationId);
  const intervals = housekeepingIntervals();
  const logRepo = EventLogRepo.open(paths.logDb);
  closers.add(() => logRepo.close());
  const housekeeping = new Housekeeping({
    log,
    intervals,
    logRepo,
    logsDir: paths.logsDir,
    logRetentionDays: () => setting('log_retention_days'),
    flowState,
    flowStateRetentionHours: setting('flow_state_retention_hours'),
    correlations,
    enqueue: compensatingEnqueue,
  });
  housekeeping.start();
  closers.add(() => housekeeping.stop());
  const scheduler = new Scheduler(scheduledFlows(deployed.flows, log), {
    locksDir: paths.locksDir,
    runner,
    log,
    pollMs: intervals.schedulerPollMs,
    leaseMs: intervals.schedulerLeaseMs,
  });
  await scheduler.start();
  closers.add(() => scheduler.stop());

  let grpc: GrpcDoor | undefined;
  if (opts.grpcPort !== undefined) {
    const descriptors = new DescriptorsRepo(registry);
    closers.add(() => descriptors.close());
    const deps: GrpcDoorDeps = {
      descriptors,
      routes: () =>
        scanDeployedFlows(artifacts)
          .flows.filter((f) => f.inbound === 'grpc' && f.grpcMethod !== undefined)
          .map((f) => ({ tenant: f.tenant, flow: f.flow, method: f.grpcMethod! })),
      gate,
      invoke: async (tenant, flow, input, meta) => {
        const result = await runner.run(runner.resolve(tenant, flow), input, meta);
        return { status: result.status, output: result.output };
      },
    };
    grpc = await startGrpcDoor({ host: opts.host, port: opts.grpcPort, log, deps });
    closers.add(() => grpc?.close());
  } else {
    warnInboundWithoutDoor(deployed.flows, log);
  }

  const bootLines = [
    `svc listening on ${address}`,
    grpc ? `grpc listening on ${grpc.address}` : '  grpc:       off (--grpc-port not given)',
    `  registry:   ${paths.registryDb}`,
    `  ui:         ${paths.uiDb} (${address}/ui)`,
    `  audit:      ${paths.auditDb}`,
    `  log:        ${paths.logDb}`,
    `  queues:     ${paths.queuesDir}`,
    `  signature:  ${opts.secret ? 'ENABLED (X-Svc-Signature required on /run and /enqueue)' : 'disabled'}`,
    `  api keys:   ${opts.noAuth ? 'DISABLED (--no-auth)' : 'required'}`,
  ];
  if (opts.noAuth) log.warn('API key authentication is DISABLED (--no-auth); every route is open');
  else if (!keys.hasAnyKey()) {
    // No bootstrap key exists by design: say how to make the first one.
    const hint = 'no API key exists yet, so every key-protected route answers 401; create one with: svc keys create --tenant <t> --label <l>';
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

/** The gate's two indexed reads plus the required scope of the latest artifact. */
function gateLookups(cache: RegistryCache, loadFlow: (tenant: string, name: string) => LoadedFlow | undefined): GateLookups {
  return {
    findKeyByHash: (hash) => {
      const row = cache.findKeyByHash(hash);
      if (row === undefined) return undefined;
      return {
        id: row.id,
        tenant: row.tenant,
        scopes: row.scopes,
        flows: row.flows,
        rateLimit: row.rateLimit ?? undefined,
        revoked: row.revokedAt !== null && row.revokedAt !== undefined,
        expiresAt: row.expiresAt ?? undefined,
      };
    },
    tenantStatus: (tenant) => cache.tenant(tenant)?.status,
    requiredScope: (tenant, flow) => {
      try {
        return loadFlow(tenant, flow)?.ir.requiredScope;
      } catch (err) {
        // A corrupt artifact is the route's 500, not the gate's 503.
        if (err instanceof IntegrityError) return undefined;
        throw err;
      }
    },
  };
}

/** `access_denied` in the log; `access.denied` on the key's tenant chain for a policy verdict. */
function recordRefusal(r: GateRefusal, events: EventLog, audit: AuditAppender): void {
  events.emit({ event: 'access_denied', correlation_id: r.correlationId, tenant: r.tenant, flow: r.flow, http_status: r.status, reason: r.reason });
  if (r.subjectTenant !== undefined && r.status !== 503) {
    audit.append({
      tenant: r.subjectTenant,
      eventType: 'access.denied',
      correlationId: r.correlationId,
      payload: { flow: `${r.tenant}/${r.flow}`, status: r.status, key_id: r.keyId, reason: r.reason },
    });
  }
}

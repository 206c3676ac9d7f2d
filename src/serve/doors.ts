/** The doors of `svc serve`: HTTP (with the queue's /enqueue) and, when asked, gRPC. */
import type { FlowExecutor } from '../app/runtime/flow-executor.js';
import { scanDeployedFlows, type DeployedFlows } from '../app/runtime/deployed-flows.js';
import { LoginThrottle } from '../app/accounts/login-throttle.js';
import type { QueueWorkers } from '../app/runtime/queue-workers.js';
import type { QueueStore } from '../queue/index.js';
import type { Logger } from '../common/logger.js';
import { warnInboundWithoutDoor } from '../doors/grpc/inbound-warnings.js';
import { executorInvoke } from '../doors/grpc/invoke.js';
import type { GrpcDoor } from '../doors/grpc/server.js';
import { createEnqueueHandler } from '../doors/http/enqueue-handler.js';
import { buildServer } from '../doors/http/server.js';
import type { HttpObserver, MetricsExposition } from '../doors/http/observer.js';
import type { LoadedFlow } from '../engine/index.js';
import type { Gate } from '../gate/gate.js';
import type { Closers } from './closers.js';
import { EXAMPLE_DOORS } from './example-doors.js';
import { openScratchFlowState } from '../storage/index.js';
import type { ServeStores } from './stores.js';

export interface DoorOptions {
  readonly host: string;
  readonly port: number;
  /** Absent: no gRPC door (flows declaring `inbound:` are warned about). */
  readonly grpcPort?: number | undefined;
  readonly secret?: string | undefined;
  /** Listen with SO_REUSEPORT beside the other processes of a `--processes` group (process-group.ts). */
  readonly reusePort?: boolean | undefined;
}

interface DoorParts {
  readonly stores: ServeStores;
  readonly gate: Gate<LoadedFlow> | undefined;
  readonly executor: FlowExecutor;
  readonly queues: QueueWorkers;
  readonly queueStore: QueueStore;
  readonly stateDir: string;
  readonly log: Logger;
  /** Metrics: the request observer, and the exposition when `/metrics` is served on the main port. */
  readonly metrics?:
    { readonly observer: HttpObserver; readonly exposition: MetricsExposition | undefined } | undefined;
}

/** Builds the HTTP door and listens; resolves to the address it listens on. */
export async function startHttpDoor(opts: DoorOptions, parts: DoorParts, closers: Closers): Promise<string> {
  const { stores, gate, executor, log } = parts;
  const bodyTimeoutMs = stores.setting('request_body_timeout_secs') * 1000;
  const app = await buildServer({
    bodyTimeoutMs,
    gate,
    secret: opts.secret,
    executor,
    events: stores.events,
    wsdl: {
      tenantActive: (t) => stores.cache.tenant(t)?.status === 'active',
      loadSoapConfig: (t, n) => stores.flows.latest(t, n)?.ir.soap,
    },
    enqueue: createEnqueueHandler({ secret: opts.secret, queues: parts.queues, log, bodyTimeoutMs }),
    log,
    ui: {
      accounts: { users: stores.uiUsers, sessions: stores.uiSessions },
      throttle: new LoginThrottle(),
      tenants: stores.tenants,
      tenantAdmin: stores.tenantAdmin,
      keys: stores.keys,
      artifacts: stores.artifacts,
      traces: stores.traces,
      certificates: stores.certificates,
      settings: stores.settings,
      audit: stores.auditRepo,
      events: stores.logRepo,
      queues: {
        store: parts.queueStore,
        waiting: () => parts.queues.waiting(),
        maskFor: (tenant, flow) => parts.queues.maskOf(tenant, flow),
      },
      caughtUp: () => stores.cache.refresh(),
      replay: { doors: EXAMPLE_DOORS, flowState: openScratchFlowState },
      ensureWorker: (tenant, flow) =>
        void parts.queues
          .ensureWorker(tenant, flow)
          .catch((err: unknown) => log.error({ err, tenant, flow }, 'queue worker could not be started')),
      facts: {
        stateDir: parts.stateDir,
        signature: opts.secret !== undefined,
        apiKeys: gate !== undefined,
        startedAt: Date.now(),
      },
      log,
    },
    observer: parts.metrics?.observer,
    metrics: parts.metrics?.exposition,
  });
  closers.add(() => app.close());
  return app.listen({ host: opts.host, port: opts.port, ...(opts.reusePort === true ? { reusePort: true } : {}) });
}

/** Opens the gRPC door when `--grpc-port` was given; otherwise warns about each flow that declares `inbound:`. */
export async function startGrpcDoorIfAsked(
  opts: DoorOptions,
  parts: DoorParts,
  deployed: DeployedFlows,
  closers: Closers,
): Promise<GrpcDoor | undefined> {
  const { stores, gate, executor, log } = parts;
  if (opts.grpcPort === undefined) {
    warnInboundWithoutDoor(deployed.flows, log);
    return undefined;
  }
  // Loaded only when asked: grpc-js and protobufjs are about 100 modules a start without gRPC skips.
  const { startGrpcDoor } = await import('../doors/grpc/server.js');
  // The door reads descriptors synchronously on every call (ServeStores.descriptorReads).
  const descriptors = stores.descriptorReads;
  const grpc = await startGrpcDoor({
    host: opts.host,
    port: opts.grpcPort,
    log,
    deps: {
      descriptors,
      routes: () =>
        scanDeployedFlows(stores.flows)
          .flows.filter((f) => f.inbound === 'grpc')
          .map((f) => ({ tenant: f.tenant, flow: f.flow, method: f.grpcMethod })),
      gate,
      invoke: executorInvoke(executor),
    },
  });
  closers.add(() => grpc.close());
  return grpc;
}

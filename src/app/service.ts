/** `svc serve`: opens the state directory, starts every door and background part, and stops them once. */
import type { FastifyInstance } from 'fastify';
import { mkdirSync } from 'node:fs';
import { createLogger, type Logger } from '../common/logger.js';
import { statePaths, type StatePaths } from '../common/paths.js';
import { SvcError } from '../common/errors.js';
import { warnInboundWithoutDoor, type InboundFlow } from '../doors/grpc/inbound-warnings.js';
import { startGrpcDoor, type GrpcDoor, type GrpcDoorDeps } from '../doors/grpc/server.js';
import { buildServer } from '../doors/http/server.js';
import { DescriptorsRepo } from '../store/descriptors-repo.js';
import { openDb, type Db } from '../store/db.js';
import { KeysRepo } from '../store/keys-repo.js';
import { registryMigrations } from '../store/migrations/registry.js';

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

export async function startService(opts: ServeOptions): Promise<RunningService> {
  const log = createLogger();
  const paths = statePaths(opts.db);
  mkdirSync(paths.stateDir, { recursive: true });
  mkdirSync(paths.queuesDir, { recursive: true });
  mkdirSync(paths.logsDir, { recursive: true });
  const registry: Db = openDb(paths.registryDb, registryMigrations);
  const app: FastifyInstance = await buildServer({ noAuth: opts.noAuth });
  const address = await app.listen({ host: opts.host, port: opts.port });
  let grpc: GrpcDoor | undefined;
  if (opts.grpcPort !== undefined) {
    grpc = await startGrpcDoor({ host: opts.host, port: opts.grpcPort, log, deps: grpcDoorDeps(registry, opts.noAuth) });
  } else {
    warnInboundWithoutDoor(deployedInboundFlows(), log);
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
  else if (!new KeysRepo(registry).hasAnyKey()) {
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
      const errors: unknown[] = [];
      for (const step of [() => app.close(), () => grpc?.close(), () => registry.close()]) {
        try {
          await step();
        } catch (err) {
          errors.push(err);
        }
      }
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

/**
 * The gRPC door's dependencies. HAND-OFF (issue 7): `routes`, `invoke` and `gate` are placeholders
 * until the compiler (inbound/grpcMethod in the latest IR), the engine and the key store are merged:
 * no route is served, and the gate fails closed (503) rather than open.
 */
function grpcDoorDeps(registry: Db, noAuth: boolean): GrpcDoorDeps {
  return {
    descriptors: new DescriptorsRepo(registry),
    routes: () => [],
    gate: noAuth
      ? undefined
      : {
          check: () => {
            throw new SvcError('SVC_ERR_STORAGE_UNAVAILABLE', 'authorization is not wired to the gRPC door yet');
          },
        },
    invoke: async () => {
      throw new SvcError('SVC_ERR_BUSY', 'the engine is not wired to the gRPC door yet');
    },
  };
}

/** HAND-OFF (issue 7): the latest IR of every deployed flow (tenant, flow, inbound, grpcMethod). */
function deployedInboundFlows(): InboundFlow[] {
  return [];
}

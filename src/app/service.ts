/** `svc serve`: opens the state directory, starts every door and background part, and stops them once. */
import type { FastifyInstance } from 'fastify';
import { mkdirSync } from 'node:fs';
import { createLogger, type Logger } from '../common/logger.js';
import { statePaths, type StatePaths } from '../common/paths.js';
import { buildServer } from '../doors/http/server.js';
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
  const bootLines = [
    `svc listening on ${address}`,
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
      for (const step of [() => app.close(), () => registry.close()]) {
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

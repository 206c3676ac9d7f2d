/** Where each state file lives: everything is placed relative to the registry database's directory. */
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export interface StatePaths {
  readonly stateDir: string;
  readonly registryDb: string;
  readonly auditDb: string;
  /** The audit writers' spool files (store/audit/audit-spool.ts). */
  readonly auditSpoolDir: string;
  readonly logDb: string;
  readonly uiDb: string;
  readonly logsDir: string;
  readonly queuesDir: string;
  readonly locksDir: string;
}

/** The default registry database: `~/.svc/registry.db` (HOME is read at call time so tests can move it). */
export function defaultDbPath(): string {
  return join(process.env.HOME || homedir(), '.svc', 'registry.db');
}

export function statePaths(dbPath: string = defaultDbPath()): StatePaths {
  const registryDb = resolve(dbPath);
  const stateDir = dirname(registryDb);
  return Object.freeze({
    stateDir,
    registryDb,
    auditDb: join(stateDir, 'audit.db'),
    auditSpoolDir: join(stateDir, 'audit-spool'),
    logDb: join(stateDir, 'log.db'),
    uiDb: join(stateDir, 'ui.db'),
    logsDir: join(stateDir, 'logs'),
    queuesDir: join(stateDir, 'queues'),
    locksDir: join(stateDir, 'locks'),
  });
}

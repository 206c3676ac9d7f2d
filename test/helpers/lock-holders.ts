/**
 * Who holds a sandbox's scheduler lock or a queue's worker lock: a lock file of the state
 * directory (`locks/scheduler.lock`, `queues/<tenant>/<flow>/consumer.lock`), or in the PostgreSQL
 * pass an advisory lock on a node's lease session, whose application name ends with `host:pid`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { statePaths } from '../../src/common/paths.js';
import { advisoryLockKey } from '../../src/queue/coordination/node-lease.js';
import { queueLockName } from '../../src/queue/pg/pg-queue-consumer.js';
import { SCHEDULER_LOCK } from '../../src/queue/coordination/coordination.js';
import { parseStoreUrl } from '../../src/store/pg/store-url.js';
import { storeRows } from './store-sql.js';
import type { Sandbox } from './svc.js';

/** The pid of the process holding the scheduler lock now; undefined when none holds it. */
export function schedulerHolderPid(sandbox: Sandbox): number | undefined {
  if (sandbox.store === undefined) {
    try {
      return (
        JSON.parse(readFileSync(join(statePaths(sandbox.db).locksDir, 'scheduler.lock'), 'utf8')) as { pid: number }
      ).pid;
    } catch {
      return undefined;
    }
  }
  return pgLockHolderPid(sandbox, sandbox.store, SCHEDULER_LOCK);
}

/** True when a worker holds queue tenant/flow's consumer lock now. */
export function queueWorkerHeld(sandbox: Sandbox, tenant: string, flow: string): boolean {
  if (sandbox.store === undefined)
    return existsSync(join(statePaths(sandbox.db).queuesDir, tenant, flow, 'consumer.lock'));
  return pgLockHolderPid(sandbox, sandbox.store, queueLockName(tenant, flow)) !== undefined;
}

function pgLockHolderPid(sandbox: Sandbox, store: string, lock: string): number | undefined {
  const k = advisoryLockKey(parseStoreUrl(store).schema, lock);
  const [row] = storeRows<{ app: string }>(
    sandbox,
    'registry',
    `SELECT a.application_name AS app FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ? AND l.objid = ? AND l.objsubid = 1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    k.classid,
    k.objid,
  );
  return row === undefined ? undefined : Number(/:(\d+)$/.exec(row.app)?.[1]);
}

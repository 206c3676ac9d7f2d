/**
 * What one tenant's queues take in a state directory (QueueStore.tenantUsage): the space allocated
 * to every directory and file under `queues/{tenant}/` (what `du` counts, so a flood of empty
 * queues counts too), and its queues (directories). Stats only: nothing is read.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isValidName } from '../../common/names.js';
import { checkTenantName, type TenantQueueUsage } from '../contract.js';
import { isErrno } from './file-io.js';
import { queuePaths } from './queue-paths.js';

/** Queues looked at at once: each waits mostly on its own stats. */
const LANES = 8;

/** @throws SvcError SVC_ERR_INVALID_NAME for a tenant name breaking the rule (checked before the disk is touched) */
export async function tenantUsage(queuesDir: string, tenant: string): Promise<TenantQueueUsage> {
  checkTenantName(tenant);
  const tenantDir = join(queuesDir, tenant);
  let names: string[];
  try {
    names = (await readdir(tenantDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { flows: [], bytes: 0 };
    throw err;
  }
  let bytes = await allocated(tenantDir);
  const valid = names.filter(isValidName);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < valid.length) {
      bytes += await queueBytes(queuesDir, tenant, valid[next++]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LANES, valid.length) }, lane));
  return { flows: valid.sort(), bytes };
}

async function queueBytes(queuesDir: string, tenant: string, flow: string): Promise<number> {
  const { dir } = queuePaths(queuesDir, tenant, flow);
  let bytes = await allocated(dir);
  for (const name of await readdir(dir).catch(() => [])) bytes += await allocated(join(dir, name));
  return bytes;
}

/** Bytes allocated to one directory or file (0 when it went away meanwhile). */
async function allocated(path: string): Promise<number> {
  try {
    return (await lstat(path)).blocks * 512;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return 0;
    throw err;
  }
}

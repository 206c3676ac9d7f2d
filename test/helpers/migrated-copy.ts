/** `svc store migrate` of a sandbox's state directory into a fresh PostgreSQL schema, checked by `svc audit --verify` there. */
import assert from 'node:assert/strict';
import { statePaths } from '../../src/common/paths.js';
import { freshPgSchema } from './pg.js';
import { svc, type Sandbox } from './svc.js';

/**
 * Migrates the sandbox's state into a fresh schema (named from `prefix`), verifies the tenant's
 * chain on the copy, and drops the schema; both commands must exit 0.
 * @returns what the verify printed
 */
export async function verifyMigratedCopy(sandbox: Sandbox, prefix: string, tenant = 'acme'): Promise<string> {
  const target = await freshPgSchema(prefix);
  try {
    const migrated = svc(sandbox, ['store', 'migrate', '--from', statePaths(sandbox.db).stateDir, '--to', target.url]);
    assert.equal(migrated.code, 0, migrated.stdout + migrated.stderr);
    const verify = svc(sandbox, ['audit', '--tenant', tenant, '--verify', '--store', target.url]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    return verify.stdout;
  } finally {
    await target.drop();
  }
}

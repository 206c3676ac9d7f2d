/** Submissions acknowledged while a server cannot chain anything: audit.db's write lock held by the test. */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { statePaths } from '../../src/common/paths.js';
import { enqueue } from './queue-flows.js';
import type { Sandbox } from './svc.js';

/** Takes the sandbox's audit.db write lock: a server's audit writer commits nothing until it is rolled back. */
export function lockAuditDb(sandbox: Sandbox): Database.Database {
  const lock = new Database(statePaths(sandbox.db).auditDb);
  lock.pragma('busy_timeout = 5000');
  lock.exec('BEGIN IMMEDIATE');
  return lock;
}

/** Submits `{"id": id}` to acme/sink once per id (its correlation id); each must be answered 202. */
export async function acknowledgedAll(url: string, key: string, ids: readonly string[]): Promise<{ text: string }[]> {
  const answers = await Promise.all(
    ids.map((id) => enqueue(url, 'sink', JSON.stringify({ id }), { key, correlationId: id })),
  );
  assert.deepEqual(
    answers.map((a) => a.status),
    ids.map(() => 202),
    'every submission acknowledged while nothing can be chained',
  );
  return answers;
}

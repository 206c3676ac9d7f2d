/** Worker thread of AuditThreadWriter: appends prepared entries to the per-tenant chains, in order. */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteAuditStore } from '../sqlite/sqlite-audit-store.js';
import type { AuditThreadReply, AuditThreadRequest } from './audit-thread.js';
import { openDb } from '../sqlite/db.js';
import { auditMigrations } from '../sqlite/migrations/audit.js';
import { unpackAuditEntries, type PreparedAuditEntry } from '../contracts/index.js';

const port = parentPort;
if (port === null) throw new Error('audit-thread-worker.js must run as a worker thread');
const db = openDb((workerData as { auditDb: string }).auditDb, auditMigrations);
const repo = new SqliteAuditStore(db);
const BATCH = 4096;
const RETRY_MS = 1000;
let pending: PreparedAuditEntry[] = [];
let retry: NodeJS.Timeout | undefined;
const waiting: { type: 'flush' | 'close'; id: number }[] = [];

function reply(msg: AuditThreadReply): void {
  port!.postMessage(msg);
}

/** Writes what is pending; on failure keeps it (in order) and tries again in a second. */
function drain(): void {
  if (retry !== undefined) return;
  try {
    while (pending.length > 0) {
      const batch = pending.slice(0, BATCH);
      const started = performance.now();
      repo.appendPrepared(batch);
      pending = pending.slice(batch.length);
      reply({ type: 'written', count: batch.length, seconds: (performance.now() - started) / 1000 });
    }
  } catch (err) {
    reply({
      type: 'error',
      message: `audit batch not written yet (retrying): ${err instanceof Error ? err.message : String(err)}`,
    });
    retry = setTimeout(() => {
      retry = undefined;
      drain();
    }, RETRY_MS);
    return;
  }
  for (const w of waiting.splice(0)) {
    if (w.type === 'close') db.close();
    reply({ type: 'done', id: w.id });
  }
}

let drainScheduled = false;

/**
 * Every message already waiting on the port is taken before the commit (setImmediate runs after
 * them): under load one commit covers the batches of many turns of the main thread, instead of
 * one commit, with its fsync, per batch.
 */
function scheduleDrain(): void {
  if (drainScheduled) return;
  drainScheduled = true;
  setImmediate(() => {
    drainScheduled = false;
    drain();
  });
}

port.on('message', (msg: AuditThreadRequest) => {
  if (msg.type === 'append') for (const e of unpackAuditEntries(msg.entries)) pending.push(e);
  else waiting.push(msg);
  scheduleDrain();
});

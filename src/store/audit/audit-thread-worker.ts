/** Worker thread of AuditThreadWriter: appends prepared entries to the per-tenant chains, in order. */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteAuditStore, type SpoolMark } from '../sqlite/sqlite-audit-store.js';
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
/** Per pending entry: its spool and number there (undefined: not spooled), so each commit moves the marks of what it chains. */
let pendingSpool: (string | undefined)[] = [];
let pendingSeq: number[] = [];
/** Per pending entry: a receipt its queue record holds, numbered in the spool but not written to it (`held`). */
let pendingHeld: boolean[] = [];
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
      const { marks, spooled, lastSeq } = marksOf(batch.length);
      const started = performance.now();
      repo.appendMarked(batch, marks);
      pending = pending.slice(batch.length);
      pendingSpool = pendingSpool.slice(batch.length);
      pendingSeq = pendingSeq.slice(batch.length);
      pendingHeld = pendingHeld.slice(batch.length);
      reply({ type: 'written', count: batch.length, spooled, lastSeq, seconds: (performance.now() - started) / 1000 });
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

/**
 * The spool marks the first `n` pending entries move (the highest number per spool), how many of
 * them were spooled (held receipts move marks but are not), and the highest number among them (0: none).
 */
function marksOf(n: number): { marks: SpoolMark[]; spooled: number; lastSeq: number } {
  const top = new Map<string, number>();
  let spooled = 0;
  let lastSeq = 0;
  for (let i = 0; i < n; i++) {
    const spool = pendingSpool[i];
    if (spool === undefined) continue;
    if (!pendingHeld[i]) spooled++;
    lastSeq = Math.max(lastSeq, pendingSeq[i]!);
    top.set(spool, Math.max(top.get(spool) ?? 0, pendingSeq[i]!));
  }
  return { marks: [...top].map(([spool, seq]) => ({ spool, seq })), spooled, lastSeq };
}

let drainScheduled = false;

/**
 * How long spooled entries (and receipts held by their queue records) may wait to be chained, so
 * that one commit covers more of them. They are durable already (the acknowledgement waited for
 * the spool's write, or the record's, not for this commit), and each commit syncs three times.
 * Milliseconds.
 */
const SPOOLED_LINGER_MS = 10;

/**
 * Every message already waiting on the port is taken before the commit (setImmediate runs after
 * them): under load one commit covers the batches of many turns of the main thread, instead of
 * one commit, with its fsync, per batch. Durable entries (only those pending) wait SPOOLED_LINGER_MS.
 */
function scheduleDrain(): void {
  if (drainScheduled) return;
  drainScheduled = true;
  const run = () => {
    drainScheduled = false;
    drain();
  };
  if (waiting.length === 0 && pendingSpool.every((s) => s !== undefined)) setTimeout(run, SPOOLED_LINGER_MS);
  else setImmediate(run);
}

port.on('message', (msg: AuditThreadRequest) => {
  if (msg.type === 'append') {
    let seq = msg.firstSeq ?? 0;
    const held = msg.held === true;
    for (const e of unpackAuditEntries(msg.entries)) {
      pending.push(e);
      pendingSpool.push(msg.spool);
      pendingSeq.push(seq++);
      pendingHeld.push(held);
    }
  } else if (msg.type === 'forget') {
    // A retired spool of this process, removed: its mark is no longer needed (a failure only leaves a row).
    try {
      repo.forgetSpools([msg.spool]);
    } catch {
      // left for the next recovery's sweep of marks
    }
    return;
  } else waiting.push(msg);
  scheduleDrain();
});

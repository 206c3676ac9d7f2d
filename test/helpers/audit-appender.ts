/**
 * Child-process helper for the concurrency test: appends entries to one tenant's chain in
 * audit.db through the built store module, either one transaction per entry (the CLI's path) or
 * through the server's AuditThreadWriter (a worker thread writing batches of several entries per
 * transaction).
 *
 * Usage: node audit-appender.js <audit.db> <tenant> <count> <sync|writer> <label> <barrier-dir> <parties>
 *
 * Each process first drops `<label>.ready` in the barrier directory and waits for `parties` such
 * files, so all of them start appending at the same moment rather than one after another.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditRepo } from '../../src/store/audit-repo.js';
import { AuditThreadWriter } from '../../src/store/audit-thread.js';
import { openDb } from '../../src/store/db.js';
import { auditMigrations } from '../../src/store/migrations/audit.js';

const [file, tenant, countText, mode, label, barrier, partiesText] = process.argv.slice(2);
if (!file || !tenant || !countText || (mode !== 'sync' && mode !== 'writer') || !label || !barrier || !partiesText) {
  process.stderr.write('usage: audit-appender <audit.db> <tenant> <count> <sync|writer> <label> <barrier-dir> <parties>\n');
  process.exit(2);
}
const count = Number(countText);
const db = openDb(file, auditMigrations, { busyTimeoutMs: 30_000 });
const repo = new AuditRepo(db);

writeFileSync(join(barrier, `${label}.ready`), '');
const deadline = Date.now() + 30_000;
while (readdirSync(barrier).filter((f) => f.endsWith('.ready')).length < Number(partiesText)) {
  if (Date.now() > deadline) throw new Error('the other appenders never started');
  await new Promise((r) => setTimeout(r, 5));
}

if (mode === 'sync') {
  for (let i = 0; i < count; i++) repo.append({ tenant, eventType: 'test.sync', payload: { label, i } });
} else {
  const writer = new AuditThreadWriter(file, { flushIntervalMs: 2, onError: (message) => process.stderr.write(`writer error: ${message}\n`) });
  for (let i = 0; i < count; i++) {
    writer.append({ tenant, eventType: 'test.writer', payload: { label, i } });
    // Yield now and then so timer flushes interleave with the other processes' writes.
    if (i % 8 === 7) await new Promise((r) => setTimeout(r, 1));
  }
  await writer.close();
}
db.close();
process.stdout.write(`${label} appended ${count}\n`);

/**
 * Child-process helper for the concurrency test: appends entries to one tenant's chain through the
 * built store module, either one transaction per entry (the CLI's path) or through the server's
 * batching writer (several entries per transaction). The target is audit.db (SqliteAuditStore, and the
 * AuditThreadWriter's worker thread) or, in the suite's PostgreSQL pass, a store URL
 * (PgAuditStore, and the PgAuditWriter a `--store` node uses).
 *
 * Usage: node audit-appender.js <audit.db | postgres://...> <tenant> <count> <sync|writer> <label> <barrier-dir> <parties>
 *
 * Each process first drops `<label>.ready` in the barrier directory and waits for `parties` such
 * files, so all of them start appending at the same moment rather than one after another.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteAuditStore } from '../../src/store/sqlite/sqlite-audit-store.js';
import { AuditThreadWriter } from '../../src/store/audit/audit-thread.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { auditMigrations } from '../../src/store/sqlite/migrations/audit.js';
import { PgAuditWriter } from '../../src/store/audit/pg-audit-writer.js';
import { openStore, type PgStores } from '../../src/storage/index.js';
import type { AuditEntryInput } from '../../src/store/contracts/index.js';

const [target, tenant, countText, mode, label, barrier, partiesText] = process.argv.slice(2);
if (!target || !tenant || !countText || (mode !== 'sync' && mode !== 'writer') || !label || !barrier || !partiesText) {
  process.stderr.write(
    'usage: audit-appender <audit.db | postgres://...> <tenant> <count> <sync|writer> <label> <barrier-dir> <parties>\n',
  );
  process.exit(2);
}
const count = Number(countText);
const onError = (message: string) => process.stderr.write(`writer error: ${message}\n`);

/** One way of appending on the target: `append` one entry, `close` once every entry is committed. */
interface Appender {
  append(input: AuditEntryInput): Promise<void> | void;
  close(): Promise<void>;
}

async function openAppender(): Promise<Appender> {
  if (target!.startsWith('postgres://')) {
    const pg = (await openStore(target!, { pg: { maxConnections: 1 } })) as PgStores;
    if (mode === 'sync') return { append: async (e) => void (await pg.audit.append(e)), close: () => pg.close() };
    const writer = new PgAuditWriter(pg.db, { flushIntervalMs: 2, onError });
    return {
      append: (e) => writer.append(e),
      close: async () => {
        await writer.close();
        await pg.close();
      },
    };
  }
  const db = openDb(target!, auditMigrations, { busyTimeoutMs: 30_000 });
  if (mode === 'sync') {
    const repo = new SqliteAuditStore(db);
    return {
      append: (e) => void repo.append(e),
      close: async () => void db.close(),
    };
  }
  const writer = new AuditThreadWriter(target!, { flushIntervalMs: 2, onError });
  return {
    append: (e) => writer.append(e),
    close: async () => {
      await writer.close();
      db.close();
    },
  };
}

const appender = await openAppender();

writeFileSync(join(barrier, `${label}.ready`), '');
const deadline = Date.now() + 30_000;
while (readdirSync(barrier).filter((f) => f.endsWith('.ready')).length < Number(partiesText)) {
  if (Date.now() > deadline) throw new Error('the other appenders never started');
  await new Promise((r) => setTimeout(r, 5));
}

for (let i = 0; i < count; i++) {
  await appender.append({ tenant, eventType: `test.${mode}`, payload: { label, i } });
  // Yield now and then so the batching writer's timer flushes interleave with the other processes' writes.
  if (mode === 'writer' && i % 8 === 7) await new Promise((r) => setTimeout(r, 1));
}
await appender.close();
process.stdout.write(`${label} appended ${count}\n`);

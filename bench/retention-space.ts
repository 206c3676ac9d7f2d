/**
 * `npm run bench:retention-space`: what one log retention cycle costs and gives back on a large
 * log database. Seeds `--rows` event rows spread over the last two days (retention of one day
 * deletes the older half), then runs one cycle (src/housekeeping/log-retention.ts: the deletes and
 * the vacuum run on the event writer's thread, between its batches) while the writer keeps appending (`--write-rps` rows/s, batches every
 * 100 ms as in svc serve). Prints the cycle's duration, its longest DELETE and incremental-vacuum
 * slice, the longest event-loop delay and the longest writer batch meanwhile, and the file's size
 * before and after. `--legacy` seeds a file created without incremental auto-vacuum, for comparison.
 *
 *   npm run bench:retention-space -- [--rows 1000000] [--write-rps 2000] [--legacy]
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { runLogRetention } from '../src/housekeeping/log-retention.js';
import { fileBytes } from '../src/store/sqlite/auto-vacuum.js';
import { migrate } from '../src/store/sqlite/db.js';
import { EventLog } from '../src/store/event-log/event-log.js';
import { SqliteEventLogStore } from '../src/store/sqlite/sqlite-event-log-store.js';
import { packRow } from '../src/store/event-log/event-log-row.js';
import { logMigrations } from '../src/store/sqlite/migrations/log.js';

const DAY_MS = 86_400_000;

/** The log database as a version before auto_vacuum created it (mode 0, none), opened without openDb (which would convert a small file). */
function legacyRepo(path: string): SqliteEventLogStore {
  const db = new Database(path);
  db.pragma('journal_mode = DELETE');
  db.pragma('synchronous = FULL');
  migrate(db, logMigrations);
  return new SqliteEventLogStore(db);
}
const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    'write-rps': { type: 'string', default: '2000' },
    legacy: { type: 'boolean', default: false },
  },
});
const rows = Number(values.rows);
const writeRps = Number(values['write-rps']);

const dir = mkdtempSync(join(tmpdir(), 'svc-retention-'));
const logDb = join(dir, 'log.db');
try {
  const seedStarted = performance.now();
  const repo = values.legacy ? legacyRepo(logDb) : SqliteEventLogStore.open(logDb);
  const now = Date.now();
  const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
  for (let done = 0; done < rows;) {
    const batch = [];
    for (let i = 0; i < 4096 && done < rows; i++, done++) {
      const ts = new Date(now - 2 * DAY_MS + Math.floor((done * 2 * DAY_MS) / rows)).toISOString();
      const payload = JSON.stringify({
        order: done,
        customer: `c-${done % 5000}`,
        amount: (done % 997) * 1.25,
        items: [{ sku: `sku-${done % 300}`, qty: 1 + (done % 4) }],
        note: 'seeded row for the retention benchmark',
      });
      batch.push(
        ...packRow({
          ts,
          correlation_id: randomUUID(),
          tenant: 'acme',
          flow: `flow-${done % 20}`,
          step: null,
          event: done % 2 === 0 ? 'received' : 'completed',
          payload,
          payload_truncated: 0,
          http_status: done % 2 === 0 ? null : 200,
          outcome: null,
          reason: null,
          trace_id: randomUUID().replace(/-/g, ''),
        }),
      );
    }
    repo.insertColumns(batch);
  }
  repo.close();
  const bytesBefore = fileBytes(logDb);
  process.stderr.write(
    `seeded ${rows} rows in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s: ${mib(bytesBefore)}\n`,
  );

  // The writer thread appends meanwhile, as in svc serve.
  let longestBatchMs = 0;
  let batches = 0;
  const events = EventLog.open(
    { logDb, logsDir: join(dir, 'logs') },
    {
      flushIntervalMs: 100,
      maxBatchRows: 4096,
      onBatchWritten: (_rows, s) => ((longestBatchMs = Math.max(longestBatchMs, s * 1000)), batches++),
    },
  );
  const perTick = Math.max(1, Math.round(writeRps / 100));
  const writer = setInterval(() => {
    for (let i = 0; i < perTick; i++)
      events.emit({
        event: 'received',
        tenant: 'acme',
        flow: 'live',
        correlation_id: randomUUID(),
        payload: { live: i },
      });
  }, 10);
  await new Promise((r) => setTimeout(r, 500)); // the writer thread up and writing
  // The same 2 s without retention: what the event loop and the writer show on this machine anyway.
  const idle = monitorEventLoopDelay({ resolution: 1 });
  idle.enable();
  longestBatchMs = 0;
  await new Promise((r) => setTimeout(r, 2000));
  idle.disable();
  const idleBatchMs = longestBatchMs;
  longestBatchMs = 0;
  batches = 0;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  const r = await runLogRetention(events, join(dir, 'logs'), 1, { now: Date.now() });
  const cycleMs = performance.now() - started;
  loop.disable();
  clearInterval(writer);
  await events.close();
  const bytesAfter = fileBytes(logDb);

  const lines: [string, string][] = [
    ['log.db created', values.legacy ? 'without auto_vacuum (an older file)' : 'auto_vacuum=INCREMENTAL'],
    ['rows seeded (half older than retention)', String(rows)],
    ['rows deleted', String(r.rowsDeleted)],
    ['retention cycle (delete + vacuum)', `${(cycleMs / 1000).toFixed(2)} s`],
    ['longest DELETE slice (2000 row ids)', `${r.longestDeleteSliceMs.toFixed(1)} ms`],
    ['longest incremental-vacuum slice', `${r.longestVacuumSliceMs.toFixed(1)} ms`],
    ['pages given back', String(r.pagesFreed)],
    [
      'event-loop delay during the cycle: max, p99',
      `${(loop.max / 1e6).toFixed(1)} ms, ${(loop.percentile(99) / 1e6).toFixed(1)} ms`,
    ],
    [
      'event-loop delay in 2 s without retention: max, p99',
      `${(idle.max / 1e6).toFixed(1)} ms, ${(idle.percentile(99) / 1e6).toFixed(1)} ms`,
    ],
    [
      `longest writer batch during the cycle (${writeRps} rows/s)`,
      `${longestBatchMs.toFixed(1)} ms over ${batches} batches (${idleBatchMs.toFixed(1)} ms without retention)`,
    ],
    ['log.db before', mib(bytesBefore)],
    ['log.db after', mib(bytesAfter)],
  ];
  const width = Math.max(...lines.map(([k]) => k.length));
  for (const [k, v] of lines) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

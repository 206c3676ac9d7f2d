/** Black-box: log retention at startup deletes old rows (trace rows too), keeps daily files one day longer, never removes today's file. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { SqliteEventLogStore } from '../src/store/sqlite/sqlite-event-log-store.js';
import { packRow, type EventRow } from '../src/store/event-log/event-log-row.js';
import { PgEventWriter } from '../src/store/event-log/pg-event-writer.js';
import { openStore, type PgStores } from '../src/storage/index.js';
import { withEventLog } from './helpers/log-reads.js';
import { createTenant, setSystemConfig } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const DAY = 86_400_000;
let sb: Sandbox;
let server: ServerProcess;
const day = (offsetDays: number) => new Date(Date.now() - offsetDays * DAY).toISOString().slice(0, 10);

function row(ts: string, correlationId: string): EventRow {
  return {
    ts,
    correlation_id: correlationId,
    tenant: 'demo',
    flow: 'x',
    step: null,
    event: 'received',
    payload: null,
    payload_truncated: 0,
    http_status: null,
    outcome: null,
    reason: null,
  };
}

/** A trace row: they live in the same table and follow the same retention. */
function traceRow(ts: string, correlationId: string): EventRow {
  return { ...row(ts, correlationId), step: 'received', event: 'step_traced', payload: '{"n":1}' };
}

/**
 * Rows written as the event log's writer writes them: into log.db, or on the PostgreSQL store
 * through its writer, so each day's rows are in that day's partition (retention drops those whole).
 */
async function writeRows(sandbox: Sandbox, rows: readonly EventRow[]): Promise<void> {
  if (sandbox.store === undefined) {
    const repo = SqliteEventLogStore.open(statePaths(sandbox.db).logDb);
    repo.insertMany(rows);
    repo.close();
    return;
  }
  const store = (await openStore(sandbox.store, { pg: { maxConnections: 1 } })) as PgStores;
  try {
    const writer = new PgEventWriter(store.db, { prefix: 'events' });
    await writer.write(rows.flatMap(packRow));
    await writer.close();
  } finally {
    await store.close();
  }
}

before(async () => {
  sb = makeSandbox();
  // log_retention_days 2: rows older than 2 days go; files of days older than 3 days go.
  createTenant(sb, 'demo');
  const paths = statePaths(sb.db);
  // In time order, as the writer appends them (retention finds its cut by id).
  await writeRows(sb, [
    traceRow(new Date(Date.now() - 10 * DAY).toISOString(), 'old-trace-10d'),
    row(new Date(Date.now() - 10 * DAY).toISOString(), 'old-10d'),
    row(new Date(Date.now() - 2 * DAY - 3_600_000).toISOString(), 'old-2d1h'),
    row(new Date(Date.now() - 2 * DAY + 3_600_000).toISOString(), 'keep-47h'),
    row(new Date().toISOString(), 'keep-now'),
    traceRow(new Date().toISOString(), 'keep-trace-now'),
  ]);
  mkdirSync(paths.logsDir, { recursive: true });
  for (const d of [10, 4, 3, 2, 1, 0]) writeFileSync(join(paths.logsDir, `events-${day(d)}.jsonl`), '{}\n');
  writeFileSync(join(paths.logsDir, 'unrelated-2000-01-01.jsonl'), '{}\n');
  setSystemConfig(sb, { log_retention_days: 2 });
  server = await startServer(sb, ['--no-auth'], {});
});

after(async () => {
  await server?.stop();
  sb?.cleanup();
});

/** Correlation ids of every row left, trace rows included (read as the support role would). */
function ids(): Promise<string[]> {
  return withEventLog(sb, async (log) =>
    [
      ...(await log.query({ tenant: 'demo', flow: 'x', limit: 100 })),
      ...(await log.queryTrace({ tenant: 'demo', flow: 'x' }, true)),
    ]
      .map((r) => r.correlation_id ?? '')
      .sort(),
  );
}

test('rows older than log_retention_days, trace rows included, are deleted at startup and younger ones kept', async () => {
  await waitFor('the expired rows deleted', async () => !(await ids()).some((id) => id.startsWith('old-')), 8000, 100);
  assert.deepEqual(await ids(), ['keep-47h', 'keep-now', 'keep-trace-now']);
});

test("daily files live one day longer than their rows, and today's file is kept", async () => {
  const logs = statePaths(sb.db).logsDir;
  const has = (d: number) => existsSync(join(logs, `events-${day(d)}.jsonl`));
  // Files go after the rows, whose deletion runs in slices with turns of the event loop between.
  await waitFor('the files of 10 and 4 days ago deleted', () => !has(10) && !has(4), 8000);
  assert.equal(has(10), false);
  assert.equal(has(4), false);
  assert.equal(has(3), true, 'the file of 3 days ago holds rows only just expired: kept one more day');
  assert.equal(has(2), true);
  assert.equal(has(1), true);
  assert.equal(has(0), true);
  assert.ok(existsSync(join(logs, 'unrelated-2000-01-01.jsonl')), 'files of other prefixes are not touched');
});

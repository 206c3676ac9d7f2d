/** Log retention on a real log.db through the event writer: old rows go and the file shrinks to what is kept; `stopping` ends a pass early. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileBytes, inspectDatabaseFile } from '../store/sqlite/auto-vacuum.js';
import { EventLog } from '../store/event-log/event-log.js';
import { SqliteEventLogStore } from '../store/sqlite/sqlite-event-log-store.js';
import { packRow } from '../store/event-log/event-log-row.js';
import { runLogRetention } from './log-retention.js';

const DAY_MS = 86_400_000;
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A state directory whose log.db holds `rows` rows over the last two days (the older half past one day of retention). */
function seeded(rows: number): { logDb: string; logsDir: string; now: number } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-retention-'));
  dirs.push(dir);
  const logDb = join(dir, 'log.db');
  const now = Date.now();
  const repo = SqliteEventLogStore.open(logDb);
  const flat = [];
  for (let i = 0; i < rows; i++) {
    const ts = new Date(now - 2 * DAY_MS + Math.floor((i * 2 * DAY_MS) / rows)).toISOString();
    flat.push(
      ...packRow({
        ts,
        correlation_id: randomUUID(),
        tenant: 'acme',
        flow: 'orders',
        step: null,
        event: 'received',
        payload: JSON.stringify({ n: i, pad: 'p'.repeat(300) }),
        payload_truncated: 0,
        http_status: null,
        outcome: null,
        reason: null,
      }),
    );
  }
  repo.insertColumns(flat);
  repo.close();
  return { logDb, logsDir: join(dir, 'logs'), now };
}

describe('log retention', () => {
  it('deletes the rows past retention and log.db shrinks to about what is kept', async () => {
    const s = seeded(20_000);
    const before = fileBytes(s.logDb);
    const events = EventLog.open(s, { inline: true });
    const r = await runLogRetention(events, s.logsDir, 1, { now: s.now });
    await events.close();
    assert.ok(Math.abs(r.rowsDeleted - 10_000) <= 2, `${r.rowsDeleted} rows deleted`);
    assert.ok(r.pagesFreed > 0);
    const afterBytes = fileBytes(s.logDb);
    assert.ok(afterBytes < before * 0.6, `log.db ${before} -> ${afterBytes} bytes`);
    assert.equal(inspectDatabaseFile(s.logDb).freePages, 0);
    const repo = SqliteEventLogStore.open(s.logDb);
    try {
      assert.equal(repo.query({ limit: 10_000 }).length, 20_000 - r.rowsDeleted);
    } finally {
      repo.close();
    }
  });

  it('runs on the writer thread with batches written between its slices', async () => {
    const s = seeded(10_000);
    const events = EventLog.open(s, { flushIntervalMs: 5 });
    let written = 0;
    const timer = setInterval(
      () => events.emit({ event: 'received', tenant: 'acme', flow: 'live', correlation_id: `live-${written++}` }),
      2,
    );
    const r = await runLogRetention(events, s.logsDir, 1, { now: s.now, sliceRows: 200, vacuumPagesPerSlice: 16 });
    clearInterval(timer);
    await events.close();
    assert.ok(r.rowsDeleted >= 4_998 && r.pagesFreed > 0);
    const repo = SqliteEventLogStore.open(s.logDb);
    try {
      assert.equal(repo.query({ flow: 'live', limit: 10_000 }).length, written, 'every live row written');
    } finally {
      repo.close();
    }
  });

  it('stops at the next slice once stopping() answers true, and the next cycle finishes the work', async () => {
    const s = seeded(10_000);
    const events = EventLog.open(s, { inline: true });
    const first = await runLogRetention(events, s.logsDir, 1, { now: s.now, sliceRows: 500, stopping: () => true });
    assert.equal(first.rowsDeleted, 500, 'one slice, then stopped');
    assert.equal(first.pagesFreed, 0, 'no vacuum after a stopped delete');
    const second = await runLogRetention(events, s.logsDir, 1, { now: s.now, sliceRows: 500 });
    await events.close();
    assert.ok(Math.abs(first.rowsDeleted + second.rowsDeleted - 5_000) <= 2);
    assert.ok(second.pagesFreed > 0);
    assert.equal(inspectDatabaseFile(s.logDb).freePages, 0);
  });
});

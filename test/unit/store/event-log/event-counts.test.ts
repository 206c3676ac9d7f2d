/**
 * log.db's event_counts (log migration 8): rows per minute and kind, kept by the SQLite store with
 * its rows (each batch's counts in the batch's transaction, each delete's in the delete's), read by
 * countsSince for the whole minutes. Checked against plain GROUP BYs over the rows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventLogStore } from '../../../../src/store/sqlite/sqlite-event-log-store.js';
import { packRow, type EventRow, type RowColumns } from '../../../../src/store/contracts/index.js';
import { openDb, type Db } from '../../../../src/store/sqlite/db.js';
import { logMigrations } from '../../../../src/store/sqlite/migrations/log.js';

const KINDS: [string, number | null][] = [
  ['received', null],
  ['completed', 200],
  ['completed', 500],
  ['queue_processed', null],
  ['completed', 404],
  ['step_traced', null],
  ['completed', 399],
];

/** A row at `ms` after 2026-01-01T10:00:00.000Z (ISO with milliseconds, as the writer stamps them), of kind `k`. */
function row(ms: number, k: number): EventRow {
  const [event, http_status] = KINDS[k % KINDS.length]!;
  return {
    ts: new Date(Date.UTC(2026, 0, 1, 10) + ms).toISOString(),
    correlation_id: `c${ms}`,
    tenant: 't',
    flow: 'f',
    step: null,
    event,
    payload: null,
    payload_truncated: 0,
    http_status,
    outcome: null,
    reason: null,
  };
}

/** `n` rows every `stepMs` from `fromMs`, kinds in turn. */
const rowsFrom = (fromMs: number, n: number, stepMs: number): EventRow[] =>
  Array.from({ length: n }, (_, i) => row(fromMs + i * stepMs, i));

const FAILED = "sum(CASE WHEN event = 'completed' AND http_status >= 400 THEN 1 ELSE 0 END)";

/** event_counts as stored, and as a GROUP BY of the rows by ts's minute and kind. */
function countsAndRows(db: Db): { stored: unknown[]; fromRows: unknown[] } {
  return {
    stored: db.prepare('SELECT minute, event, n, failed FROM event_counts ORDER BY minute, event').all(),
    fromRows: db
      .prepare(
        `SELECT substr(ts, 1, 16) AS minute, event, count(*) AS n, ${FAILED} AS failed FROM events GROUP BY minute, event ORDER BY minute, event`,
      )
      .all(),
  };
}

/** countsSince's answer as it was before event_counts: the rows from the first id at or after `iso`, by kind. */
function plainCounts(db: Db, repo: SqliteEventLogStore, iso: string): unknown {
  const rows = db
    .prepare(`SELECT event, count(*) AS n, ${FAILED} AS failed FROM events WHERE id >= ? GROUP BY event`)
    .all(repo.firstIdAtOrAfter(iso)) as { event: string; n: number; failed: number }[];
  const byEvent: Record<string, number> = {};
  let failedCompletions = 0;
  for (const r of rows) {
    byEvent[r.event] = r.n;
    failedCompletions += r.failed;
  }
  return { byEvent, failedCompletions };
}

/** Instants at, just before, just after and inside minutes, on the minute in both forms, and around the rows. */
function instants(rows: readonly EventRow[]): string[] {
  const base = Date.UTC(2026, 0, 1, 10);
  const out = new Set<string>(['2026-01-01T09:59:59.999Z', '2026-01-01T11', '2026-01-01T10', '2026-01-01T10:03']);
  for (let s = 0; s <= 6 * 60; s += 15) {
    const iso = new Date(base + s * 1000).toISOString();
    out.add(iso);
    out.add(iso.replace('.000Z', 'Z'));
    out.add(new Date(base + s * 1000 - 1).toISOString());
    out.add(new Date(base + s * 1000 + 1).toISOString());
  }
  for (const r of rows) out.add(r.ts);
  return [...out].sort();
}

test('countsSince equals a count of the rows from its first id on, instants at, before, inside and on minutes, through writes and retention', async () => {
  const db = openDb(':memory:', logMigrations);
  const repo = new SqliteEventLogStore(db);
  try {
    // Five minutes and a half of rows, 1.7 s apart, in batches of 37 (batches cross minutes).
    const rows = rowsFrom(0, 195, 1700);
    for (let i = 0; i < rows.length; i += 37) repo.insertColumns(rows.slice(i, i + 37).flatMap(packRow));
    const check = (when: string) => {
      const { stored, fromRows } = countsAndRows(db);
      assert.deepEqual(stored, fromRows, `event_counts ${when}`);
      for (const iso of instants(rows))
        assert.deepEqual(repo.countsSince(iso), plainCounts(db, repo, iso), `${iso} ${when}`);
    };
    check('after the writes');
    // Retention inside a minute (10:01:20.5), then in slices of 11 rows inside another (10:02:41).
    assert.ok(repo.deleteOlderThan('2026-01-01T10:01:20.500Z') > 0);
    check('after a cut inside 10:01');
    let turns = 0;
    assert.ok((await repo.deleteOlderThanInSlices('2026-01-01T10:02:41Z', 11, async () => ++turns > 0)) > 0);
    assert.ok(turns > 1);
    check('after a sliced cut inside 10:02');
    repo.deleteOlderThan('2026-01-01T11:00:00Z');
    assert.deepEqual(db.prepare('SELECT count(*) AS n FROM event_counts').get(), { n: 0 });
    assert.deepEqual(repo.countsSince('2026-01-01T10:00:00Z'), { byEvent: {}, failedCompletions: 0 });
  } finally {
    repo.close();
  }
});

test('a row written late with an older ts counts in its own minute, and leaves it with its rows', () => {
  const db = openDb(':memory:', logMigrations);
  const repo = new SqliteEventLogStore(db);
  try {
    repo.insertMany(rowsFrom(0, 20, 10_000));
    repo.insertMany([row(5_000, 2), row(185_000, 2)]); // 10:00:05 and 10:03:05, after rows of 10:03
    assert.deepEqual(
      db.prepare("SELECT n, failed FROM event_counts WHERE minute = '2026-01-01T10:00' AND event = 'completed'").get(),
      { n: 4, failed: 3 }, // 10:00:10 (200), 10:00:20 (500), 10:00:40 (404), and the late one (500)
    );
    const { stored, fromRows } = countsAndRows(db);
    assert.deepEqual(stored, fromRows);
    // Retention deletes by id up to the cut, ts before it: the late 10:00:05 row stays, and so does its count.
    repo.deleteOlderThan('2026-01-01T10:01:30.000Z');
    const after = countsAndRows(db);
    assert.deepEqual(after.stored, after.fromRows);
    assert.deepEqual(db.prepare("SELECT n, failed FROM event_counts WHERE minute = '2026-01-01T10:00'").all(), [
      { n: 1, failed: 1 },
    ]);
  } finally {
    repo.close();
  }
});

test('an upgraded log (rows written at version 7, then migration 8) answers countsSince as before', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-counts-'));
  const path = join(dir, 'log.db');
  try {
    const old = openDb(
      path,
      logMigrations.filter((m) => m.version <= 7),
    );
    const rows = rowsFrom(0, 300, 1100);
    const insert = old.prepare(
      'INSERT INTO events (ts, correlation_id, tenant, flow, step, event, payload, payload_truncated, http_status, outcome, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    old.transaction(() => {
      for (const r of rows) insert.run(packRow(r).slice(0, 11));
    })();
    assert.equal(old.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'event_counts'").pluck().get(), 0);
    const oldAnswers = new Map<string, unknown>();
    // What countsSince answered at version 7: the rows from the first id at or after the instant.
    const firstId = old.prepare<[string], { id: number | null }>('SELECT min(id) AS id FROM events WHERE ts >= ?');
    for (const iso of instants(rows)) {
      const from = firstId.get(iso)?.id ?? Number.MAX_SAFE_INTEGER;
      const counted = old
        .prepare(`SELECT event, count(*) AS n, ${FAILED} AS failed FROM events WHERE id >= ? GROUP BY event`)
        .all(from) as { event: string; n: number; failed: number }[];
      oldAnswers.set(iso, {
        byEvent: Object.fromEntries(counted.map((c) => [c.event, c.n])),
        failedCompletions: counted.reduce((a, c) => a + c.failed, 0),
      });
    }
    old.close();
    const repo = SqliteEventLogStore.open(path); // applies migration 8
    const db = openDb(path, logMigrations);
    try {
      const { stored, fromRows } = countsAndRows(db);
      assert.ok(stored.length > 0);
      assert.deepEqual(stored, fromRows);
      for (const [iso, answer] of oldAnswers) assert.deepEqual(repo.countsSince(iso), answer, iso);
      // And it keeps them as rows are added.
      repo.insertMany(rowsFrom(330_000, 50, 900));
      const later = countsAndRows(db);
      assert.deepEqual(later.stored, later.fromRows);
    } finally {
      db.close();
      repo.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a failed batch leaves neither rows nor counts: a bad row rolls back the counts, a failed count the rows', () => {
  const db = openDb(':memory:', logMigrations);
  const repo = new SqliteEventLogStore(db);
  try {
    repo.insertMany(rowsFrom(0, 40, 1000));
    const before = countsAndRows(db);
    const rowCount = () => db.prepare('SELECT count(*) AS n FROM events').pluck().get();
    // The last row has no kind (events.event is NOT NULL): the whole batch fails.
    const bad: RowColumns = [
      ...rowsFrom(60_000, 70, 500).flatMap(packRow),
      ...packRow({ ...row(95_000, 0), event: null as unknown as string }),
    ];
    assert.throws(() => repo.insertColumns(bad), /NOT NULL/);
    assert.equal(rowCount(), 40);
    assert.deepEqual(countsAndRows(db), before);
    // The counts' upsert fails after the rows went in: the rows go too.
    db.exec("CREATE TRIGGER no_counts BEFORE INSERT ON event_counts BEGIN SELECT RAISE(ABORT, 'counts refused'); END");
    assert.throws(() => repo.insertColumns(rowsFrom(120_000, 30, 500).flatMap(packRow)), /counts refused/);
    assert.equal(rowCount(), 40);
    assert.deepEqual(countsAndRows(db), before);
    db.exec('DROP TRIGGER no_counts');
    repo.insertColumns(rowsFrom(120_000, 30, 500).flatMap(packRow));
    const after = countsAndRows(db);
    assert.deepEqual(after.stored, after.fromRows);
  } finally {
    repo.close();
  }
});

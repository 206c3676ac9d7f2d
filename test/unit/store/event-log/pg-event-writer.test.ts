import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshPgSchema, type PgSchema } from '../../../helpers/pg.js';
import { EventLog } from '../../../../src/store/event-log/event-log.js';
import { CLOSING_GRACE_MS } from '../../../../src/store/event-log/pg-event-writer.js';
import { migratePg } from '../../../../src/store/pg/migrate.js';
import { PgDb } from '../../../../src/store/pg/pg-db.js';
import { PgEventLogStore } from '../../../../src/store/pg/pg-event-log-store.js';
import { partitionDay } from '../../../../src/store/pg/pg-event-partitions.js';
import { parseStoreUrl } from '../../../../src/store/pg/store-url.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-pg-events-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const rows = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    event: 'received' as const,
    ts: `2001-02-03T04:05:0${i}Z`,
    tenant: 'acme',
    flow: 'f',
  }));
const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n');

/** A pool on a fresh schema (migrated unless `migrate` is false) and an EventLog on it, for `fn`; all closed and dropped after. */
async function withPgLog(
  fn: (db: PgDb, log: EventLog, schema: PgSchema, errors: Error[]) => Promise<void>,
  migrate = true,
): Promise<void> {
  const schema = await freshPgSchema();
  const db = new PgDb(parseStoreUrl(schema.url), { maxConnections: 3 });
  const errors: Error[] = [];
  const log = new EventLog({ pg: db, flushIntervalMs: 60_000, onError: (err) => errors.push(err) });
  try {
    if (migrate) await migratePg(db);
    await fn(db, log, schema, errors);
  } finally {
    await log.close();
    await db.close();
    await schema.drop();
  }
}

describe('PostgreSQL event writer', () => {
  test('a batch the unreachable database cannot take is held (never dropped while the log runs); a closing log gives up after its grace, counts and reports the rows, and they still reach the daily file', async () => {
    const db = new PgDb(parseStoreUrl('postgres://postgres@127.0.0.1:1/test'), { connectTimeoutMs: 200 });
    const errors: Error[] = [];
    const logsDir = join(dir, 'lost');
    const log = new EventLog({ pg: db, logsDir, flushIntervalMs: 1, onError: (err) => errors.push(err) });
    try {
      for (const e of rows(3)) log.emit(e);
      await new Promise((r) => setTimeout(r, 1500)); // past one try and its retry
      assert.equal(log.queuedRows, 3, 'held for the database');
      assert.equal(log.droppedRows, 0);
      assert.equal(errors.length, 0);
      const closing = Date.now();
      await log.close();
      const took = Date.now() - closing;
      assert.ok(took >= CLOSING_GRACE_MS - 100 && took < CLOSING_GRACE_MS + 3000, `close took ${took} ms`);
      assert.equal(log.droppedRows, 3);
      assert.equal(errors.length, 1);
      assert.match(
        errors[0]!.message,
        /^3 event row\(s\) not written \(3 lost since start\): the PostgreSQL store .* is unavailable/,
      );
      assert.equal(lines(join(logsDir, 'events-2001-02-03.jsonl')).length, 3);
    } finally {
      await log.close();
      await db.close();
    }
  });

  test('after a refused batch the next one is written; rows whose partition could not be made go to the default one', async () =>
    withPgLog(async (db, log, schema, errors) => {
      await db.query(`CREATE SCHEMA ${schema.name}`);
      for (const e of rows(2)) log.emit(e);
      await log.flush(); // no events table yet
      assert.equal(log.droppedRows, 2);
      await migratePg(db);
      for (const e of rows(4)) log.emit(e);
      await log.flush();
      assert.equal(log.droppedRows, 2);
      assert.equal(errors.length, 1);
      assert.equal((await new PgEventLogStore(db).query()).length, 4);
      // The partitions failed with the first batch; the writer waits before trying again.
      assert.equal((await db.query('SELECT count(*) AS n FROM events_default')).rows[0]!.n, 4);
    }, false));

  test('a NUL character, which PostgreSQL text cannot hold, is stored as U+FFFD instead of refusing the batch', async () =>
    withPgLog(async (db, log) => {
      log.emit({ event: 'access_denied', ts: '2001-02-03T04:05:06Z', reason: 'bad\0key', payload: { k: 'a\0b' } });
      await log.flush();
      assert.equal(log.droppedRows, 0);
      const [row] = await new PgEventLogStore(db).query();
      assert.equal(row?.reason, 'bad\uFFFDkey');
      assert.deepEqual(row?.payload, { k: 'a\0b' });
    }));
});

describe('event retention on PostgreSQL', () => {
  test('a partition the busy table will not let go is emptied in slices instead, and dropped by a later pass', async () =>
    withPgLog(async (db, log) => {
      for (const e of [...rows(5), { event: 'received' as const, ts: '2001-02-05T00:00:00Z' }]) log.emit(e);
      await log.flush();
      const cutoffIso = '2001-02-04T00:00:00Z';
      const partitionExists = async () =>
        (await db.query("SELECT to_regclass('events_20010203') IS NOT NULL AS found")).rows[0]!.found as boolean;
      // A long read holds the table: DROP waits for it no longer than the partition lock timeout.
      const stats = await db.readSnapshot(async (reader) => {
        await reader.query('SELECT count(*) FROM events');
        return log.retainRows({ cutoffIso, sliceRows: 2 });
      });
      assert.deepEqual(
        { rowsDeleted: stats.rowsDeleted, partitionsDropped: stats.partitionsDropped },
        { rowsDeleted: 5, partitionsDropped: 0 },
      );
      assert.equal(await partitionExists(), true);
      const again = await log.retainRows({ cutoffIso, sliceRows: 2 });
      assert.deepEqual(
        { rowsDeleted: again.rowsDeleted, partitionsDropped: again.partitionsDropped },
        { rowsDeleted: 0, partitionsDropped: 1 },
      );
      assert.equal(await partitionExists(), false);
      assert.deepEqual(
        (await new PgEventLogStore(db).query()).map((r) => r.ts),
        ['2001-02-05T00:00:00Z'],
      );
    }));
});

describe('event partitions', () => {
  test('a row belongs to the day its ts starts with, when that is a calendar day', () => {
    assert.equal(partitionDay('2030-01-02T03:04:05Z'), '2030-01-02');
    assert.equal(partitionDay('2024-02-29'), '2024-02-29');
    assert.equal(partitionDay('2023-02-29T00:00:00Z'), undefined);
    assert.equal(partitionDay('2030-13-01T00:00:00Z'), undefined);
    assert.equal(partitionDay('not a date'), undefined);
  });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fillBut, mountTmpfs, unmountTmpfs } from '../../../helpers/tmpfs.js';
import { JSON_MAX_DEPTH } from '../../../../src/common/json-depth.js';
import { MaskSet } from '../../../../src/common/mask.js';
import { XmlValue } from '../../../../src/common/xml-value.js';
import { EventLog, SqliteEventLogStore, toEventRow } from '../../../../src/store/event-log/event-log.js';
import { rowToJsonLine, type EventRow, type LogEventInput } from '../../../../src/store/event-log/event-log-row.js';
import { openDb } from '../../../../src/store/sqlite/db.js';
import { logMigrations } from '../../../../src/store/sqlite/migrations/log.js';

function dirs(): { dir: string; logDb: string; logsDir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-evlog-'));
  return {
    dir,
    logDb: join(dir, 'log.db'),
    logsDir: join(dir, 'logs'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

test('event_only keeps no payload; full keeps it masked; payload_trimmed caps it', () => {
  const payload = { id: 1, password: 'p', text: 'x'.repeat(100) };
  assert.equal(toEventRow({ event: 'completed', payload, logLevel: 'event_only' }, 10).payload, null);
  const full = toEventRow({ event: 'completed', payload, logLevel: 'full' }, 10);
  assert.deepEqual(JSON.parse(full.payload!), { id: 1, password: '***', text: 'x'.repeat(100) });
  assert.equal(full.payload_truncated, 0);
  const trimmed = toEventRow({ event: 'completed', payload, logLevel: 'payload_trimmed' }, 20);
  assert.equal(trimmed.payload_truncated, 1);
  const text = JSON.parse(trimmed.payload!) as string;
  assert.equal(text, '{"id":1,"password":"');
  assert.ok(Buffer.byteLength(text) <= 20);
  const small = toEventRow({ event: 'completed', payload: { a: 1 }, logLevel: 'payload_trimmed' }, 20);
  assert.deepEqual([small.payload, small.payload_truncated], ['{"a":1}', 0]);
});

test('trimming never splits a multi-byte character', () => {
  const row = toEventRow({ event: 'received', payload: 'ééééé', logLevel: 'payload_trimmed' }, 4);
  assert.equal(JSON.parse(row.payload!), '"é');
});

test('trace rows keep the whole masked payload whatever the log level, extra fields included', () => {
  const row = toEventRow(
    {
      event: 'step_traced',
      step: 's',
      payload: { big: 'y'.repeat(50), pin: '1234', iban: 'DE' },
      logLevel: 'event_only',
      mask: new MaskSet(['iban']),
    },
    8,
  );
  assert.deepEqual(JSON.parse(row.payload!), { big: 'y'.repeat(50), pin: '***', iban: '***' });
});

test('boundary events never carry a step; XML payloads become an _unrepresentable marker', () => {
  assert.equal(toEventRow({ event: 'received', step: 'x' }, 10).step, null);
  assert.equal(toEventRow({ event: 'queue_processed', step: 'x', outcome: 'succeeded' }, 10).step, null);
  assert.equal(toEventRow({ event: 'step_traced', step: 'x' }, 10).step, 'x');
  const xml = toEventRow({ event: 'step_traced', payload: new XmlValue('<order><pin>1</pin></order>', 'order') }, 10);
  assert.deepEqual(JSON.parse(xml.payload!), { _unrepresentable: 'order' });
});

/** `depth` objects nested under "a" around `leaf`. */
function nested(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

const DEEP_MARKER = `{"_unrepresentable":"nests deeper than ${JSON_MAX_DEPTH} levels"}`;

const deepRows: { what: string; input: LogEventInput; payload: string | null }[] = [
  {
    what: 'a completed row, payload 10,000 deep',
    input: { event: 'completed', payload: nested(10_000, 1), logLevel: 'full' },
    payload: DEEP_MARKER,
  },
  {
    what: 'a trace row, a list 20,000 deep',
    input: { event: 'step_traced', step: 's', payload: JSON.parse('['.repeat(20_000) + ']'.repeat(20_000)) as unknown },
    payload: DEEP_MARKER,
  },
  {
    what: 'a trimmed row, one level past the limit',
    input: { event: 'received', payload: nested(JSON_MAX_DEPTH + 1, 1), logLevel: 'payload_trimmed' },
    payload: DEEP_MARKER,
  },
  {
    what: 'at the limit, masked as ever',
    input: { event: 'completed', payload: nested(JSON_MAX_DEPTH - 1, { pin: 1 }), logLevel: 'full' },
    payload: JSON.stringify(nested(JSON_MAX_DEPTH - 1, { pin: '***' })),
  },
  {
    what: 'event_only never looks at the payload',
    input: { event: 'completed', payload: nested(10_000, 1), logLevel: 'event_only' },
    payload: null,
  },
];

test('a payload nesting deeper than the limit keeps its row, with an _unrepresentable marker for payload', () => {
  for (const c of deepRows) assert.equal(toEventRow(c.input, 4096).payload, c.payload, c.what);
});

test('every deep row emitted is written, none dropped', async () => {
  const d = dirs();
  const errors: Error[] = [];
  const log = new EventLog({
    logDb: d.logDb,
    logsDir: d.logsDir,
    prefix: 'svc',
    inline: true,
    flushIntervalMs: 60_000,
    onError: (err) => errors.push(err),
  });
  for (const c of deepRows) log.emit({ ...c.input, tenant: 't', flow: 'f', ts: '2026-02-01T00:00:00Z' });
  await log.close();
  assert.deepEqual(errors, []);
  const repo = SqliteEventLogStore.open(d.logDb);
  assert.equal(repo.query({}).length + repo.queryTrace({}, true).length, deepRows.length);
  repo.close();
  d.cleanup();
});

test('credential headers in a traced egress payload are masked', () => {
  const row = toEventRow(
    {
      event: 'egress_traced',
      http_status: 200,
      payload: { headers: { 'Set-Cookie': 'a', 'www-authenticate': 'b', 'x-ok': 'c' }, body: null },
    },
    10,
  );
  assert.deepEqual(JSON.parse(row.payload!), {
    headers: { 'Set-Cookie': '***', 'www-authenticate': '***', 'x-ok': 'c' },
    body: null,
  });
});

test('a JSON Lines row is valid JSON whatever its strings hold, and equals the row', () => {
  const odd = [
    'plain',
    'quote " and \\ backslash',
    'line\nbreak\ttab\u0001',
    'é 日本 😀',
    'lone \ud800 surrogate',
    '\u2028',
  ];
  for (const text of odd) {
    const row: EventRow = {
      ts: '2026-01-02T03:04:05Z',
      correlation_id: text,
      tenant: 'acme',
      flow: 'f',
      step: text,
      event: 'step_traced',
      payload: JSON.stringify({ text }),
      payload_truncated: 1,
      http_status: 201,
      outcome: text,
      reason: text,
    };
    const line = rowToJsonLine(row);
    assert.ok(line.endsWith('}\n') && !line.slice(0, -1).includes('\n'), 'one line');
    assert.deepEqual(JSON.parse(line), { ...row, payload: { text }, payload_truncated: true });
    // Byte for byte what JSON.stringify writes for each string.
    assert.ok(line.includes(`"correlation_id":${JSON.stringify(text)},`));
  }
});

test("a terminal row's JSON Line carries its duration and failing step; other lines leave them out", () => {
  const base: EventRow = {
    ts: '2026-01-02T03:04:05.678Z',
    correlation_id: 'c1',
    tenant: 'acme',
    flow: 'f',
    step: null,
    event: 'dlq_moved',
    payload: null,
    payload_truncated: 0,
    http_status: null,
    outcome: 'dead_lettered',
    reason: 'boom',
  };
  const terminal = JSON.parse(rowToJsonLine({ ...base, duration_ms: 12.5, failed_step: 'post "x"' }));
  assert.deepEqual([terminal.duration_ms, terminal.failed_step], [12.5, 'post "x"']);
  const other = JSON.parse(rowToJsonLine({ ...base, event: 'received' }));
  assert.equal('duration_ms' in other || 'failed_step' in other, false);
});

test('rows land in SQLite and the daily JSON Lines file after flush (worker thread)', async () => {
  const d = dirs();
  const log = new EventLog({ logDb: d.logDb, logsDir: d.logsDir, flushIntervalMs: 1000 });
  try {
    log.emit({
      event: 'received',
      tenant: 'acme',
      flow: 'f',
      correlation_id: 'c1',
      payload: { token: 't', a: 1 },
      logLevel: 'full',
      ts: '2026-01-02T03:04:05Z',
    });
    log.emit({
      event: 'completed',
      tenant: 'acme',
      flow: 'f',
      correlation_id: 'c1',
      http_status: 200,
      ts: '2026-01-02T03:04:06Z',
    });
    log.emit({
      event: 'access_denied',
      tenant: 'acme',
      flow: 'g',
      reason: 'unknown key',
      http_status: 401,
      ts: '2026-01-03T00:00:00Z',
    });
    await log.flush();
    const repo = SqliteEventLogStore.open(d.logDb);
    const rows = repo.query({ tenant: 'acme', flow: 'f', limit: 10 });
    assert.deepEqual(
      rows.map((r) => r.event),
      ['completed', 'received'],
    );
    assert.deepEqual(rows[1]!.payload, { token: '***', a: 1 });
    assert.equal(rows[0]!.http_status, 200);
    assert.equal(repo.query({ event: 'access_denied' })[0]!.reason, 'unknown key');
    assert.equal(repo.query({ correlation_id: 'c1' }).length, 2);
    const day1 = readFileSync(join(d.logsDir, 'events-2026-01-02.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(day1.length, 2);
    assert.deepEqual(day1[0], {
      ts: '2026-01-02T03:04:05Z',
      correlation_id: 'c1',
      tenant: 'acme',
      flow: 'f',
      step: null,
      event: 'received',
      payload: { token: '***', a: 1 },
      http_status: null,
    });
    const day2 = readFileSync(join(d.logsDir, 'events-2026-01-03.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(day2[0].reason, 'unknown key');
    assert.equal(repo.deleteOlderThan('2026-01-03T00:00:00Z'), 2);
    assert.equal(repo.query({}).length, 1);
    repo.close();
  } finally {
    await log.close();
    d.cleanup();
  }
});

test('close flushes pending rows and later emits are dropped (inline writer)', async () => {
  const d = dirs();
  const log = new EventLog({
    logDb: d.logDb,
    logsDir: d.logsDir,
    prefix: 'svc',
    inline: true,
    flushIntervalMs: 60_000,
  });
  log.emit({ event: 'queue_processed', tenant: 't', flow: 'f', outcome: 'fault_handled', ts: '2026-02-01T00:00:00Z' });
  await log.close();
  assert.equal(log.state, 'closed');
  log.emit({ event: 'queue_failed', tenant: 't', flow: 'f' });
  const repo = SqliteEventLogStore.open(d.logDb);
  const rows = repo.query({});
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.outcome, 'fault_handled');
  repo.close();
  assert.match(readFileSync(join(d.logsDir, 'svc-2026-02-01.jsonl'), 'utf8'), /"outcome":"fault_handled"/);
  d.cleanup();
});

test('a full batch is written without waiting for the timer', async () => {
  const d = dirs();
  const log = new EventLog({
    logDb: d.logDb,
    logsDir: d.logsDir,
    inline: true,
    flushIntervalMs: 60_000,
    maxBatchRows: 3,
  });
  for (let i = 0; i < 3; i++) log.emit({ event: 'received', tenant: 't', flow: 'f' });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  const repo = SqliteEventLogStore.open(d.logDb);
  assert.equal(repo.query({}).length, 3);
  repo.close();
  await log.close();
  d.cleanup();
});

/** Reads the rows of log.db oldest first, and the correlation ids of the daily file's lines. */
function written(d: { logDb: string; logsDir: string }, day: string): { db: string[]; file: string[]; byId: number } {
  const repo = SqliteEventLogStore.open(d.logDb);
  try {
    const db = repo.query({ oldestFirst: true, limit: 100 }).map((r) => r.correlation_id!);
    const byId = repo.query({ correlation_id: 'c1' }).length + repo.query({ correlation_id: 'c7' }).length;
    let file: string[] = [];
    try {
      file = readFileSync(join(d.logsDir, `events-${day}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { correlation_id: string }).correlation_id);
    } catch {
      // no file yet
    }
    return { db, file, byId };
  } finally {
    repo.close();
  }
}

/** Emits one `received` row at `ts` for each of the correlation ids c<from> to c<to>. */
function emitReceived(log: EventLog, from: number, to: number, ts: string): void {
  for (let i = from; i <= to; i++) log.emit({ event: 'received', tenant: 't', flow: 'f', correlation_id: `c${i}`, ts });
}

const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

for (const inline of [true, false]) {
  test(`a batch handed over in chunks is written whole, in order, and none of it before its end (${inline ? 'inline' : 'worker thread'})`, async () => {
    const d = dirs();
    const batches: number[] = [];
    const log = new EventLog({
      logDb: d.logDb,
      logsDir: d.logsDir,
      inline,
      flushIntervalMs: 60_000,
      maxBatchRows: 7,
      chunkRows: 3,
      onBatchWritten: (rows) => batches.push(rows),
    });
    try {
      const ts = '2026-04-01T00:00:00.000Z';
      emitReceived(log, 1, 6, ts);
      assert.equal(log.queuedRows, 6);
      await turns(20);
      // Two chunks are with the writer, but their batch has not ended: nothing is written yet.
      assert.deepEqual(written(d, '2026-04-01'), { db: [], file: [], byId: 0 });
      emitReceived(log, 7, 7, ts);
      await log.flush();
      const all = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'];
      // Both ends of the batch are found by correlation id (the filters span the chunks).
      assert.deepEqual(written(d, '2026-04-01'), { db: all, file: all, byId: 2 });
      assert.deepEqual(batches, [7]);
      // A batch whose rows were all staged (none left in the open chunk) is written by flush().
      emitReceived(log, 8, 9, ts);
      emitReceived(log, 10, 10, ts);
      await log.flush();
      assert.deepEqual(written(d, '2026-04-01').db, [...all, 'c8', 'c9', 'c10']);
      assert.deepEqual(batches, [7, 3]);
      assert.equal(log.queuedRows, 0);
    } finally {
      await log.close();
      d.cleanup();
    }
  });
}

test('a chunk that would pass the rows held for the database is dropped and reported; the rows staged before it are still written', async () => {
  const d = dirs();
  const errors: string[] = [];
  const log = new EventLog({
    logDb: d.logDb,
    logsDir: d.logsDir,
    flushIntervalMs: 60_000,
    maxBatchRows: 100,
    chunkRows: 2,
    maxHeldRows: 3,
    onError: (err) => errors.push(err.message),
  });
  try {
    const ts = '2026-04-02T00:00:00.000Z';
    emitReceived(log, 1, 4, ts);
    assert.equal(log.droppedRows, 2);
    assert.match(errors[0] ?? '', /^2 event row\(s\) not written \(2 lost since start\): 2 rows are already held/);
    emitReceived(log, 5, 5, ts);
    await log.flush();
    assert.deepEqual(written(d, '2026-04-02').db, ['c1', 'c2', 'c5']);
    assert.equal(log.queuedRows, 0);
  } finally {
    await log.close();
    d.cleanup();
  }
});

test('retention deletes in slices, turning between them, and stops when asked', async () => {
  const d = dirs();
  const repo = SqliteEventLogStore.open(d.logDb);
  try {
    const row = (ts: string, i: number): EventRow => ({
      ts,
      correlation_id: `c${i}`,
      tenant: 't',
      flow: 'f',
      step: null,
      event: 'received',
      payload: null,
      payload_truncated: 0,
      http_status: null,
      outcome: null,
      reason: null,
    });
    repo.insertMany(
      Array.from({ length: 12_000 }, (_, i) => row(i < 10_500 ? '2026-01-01T00:00:00Z' : '2026-03-01T00:00:00Z', i)),
    );
    let turns = 0;
    const deleted = await repo.deleteOlderThanInSlices('2026-02-01T00:00:00Z', 1000, async () => (turns++, true));
    assert.equal(deleted, 10_500);
    assert.equal(turns, 11, 'one turn after each slice of 1000 ids');
    assert.equal(repo.query({ limit: 10_000 }).length, 1500);
    repo.insertMany(Array.from({ length: 3000 }, (_, i) => row('2026-01-15T00:00:00Z', i)));
    // New rows are appended after the kept ones, so none of these is before the cut: nothing goes.
    assert.equal(await repo.deleteOlderThanInSlices('2026-02-01T00:00:00Z', 1000, async () => false), 0);
  } finally {
    repo.close();
    d.cleanup();
  }
});

test('retention stops after the slice in which it was asked to', async () => {
  const d = dirs();
  const repo = SqliteEventLogStore.open(d.logDb);
  try {
    const rows = Array.from({ length: 5000 }, (_, i): EventRow => ({
      ts: '2026-01-01T00:00:00Z',
      correlation_id: `c${i}`,
      tenant: 't',
      flow: 'f',
      step: null,
      event: 'received',
      payload: null,
      payload_truncated: 0,
      http_status: null,
      outcome: null,
      reason: null,
    }));
    repo.insertMany(rows);
    let turns = 0;
    assert.equal(await repo.deleteOlderThanInSlices('2026-02-01T00:00:00Z', 1000, async () => ++turns < 2), 2000);
    assert.equal(repo.query({ limit: 10_000 }).length, 3000);
  } finally {
    repo.close();
    d.cleanup();
  }
});

test('queries bound by time find their rows by id, counts since a time split failed completions, and trace rows stay out', () => {
  const repo = new SqliteEventLogStore(openDb(':memory:', logMigrations));
  const at = (ts: string, event: string, http_status: number | null = null, correlation_id = ts): EventRow => ({
    ts,
    correlation_id,
    tenant: 't',
    flow: 'f',
    step: null,
    event,
    payload: null,
    payload_truncated: 0,
    http_status,
    outcome: null,
    reason: null,
  });
  repo.insertMany([
    at('2026-01-01T09:00:00Z', 'completed', 200),
    at('2026-01-01T10:00:00Z', 'completed', 500),
    at('2026-01-01T10:30:00Z', 'step_traced'),
    at('2026-01-01T11:00:00Z', 'completed', 422),
    at('2026-01-01T11:00:30Z', 'queue_processed'),
  ]);
  assert.deepEqual(
    repo.query({ since: '2026-01-01T10:00', until: '2026-01-01T11:00' }).map((r) => r.ts),
    ['2026-01-01T11:00:30Z', '2026-01-01T11:00:00Z', '2026-01-01T10:00:00Z'],
  );
  assert.deepEqual(repo.query({ since: '2026-01-01T12' }), []);
  const c = repo.countsSince('2026-01-01T10:00:00Z');
  assert.deepEqual(c, { byEvent: { completed: 2, step_traced: 1, queue_processed: 1 }, failedCompletions: 2 });
  assert.deepEqual(
    repo.query({ beforeId: 3 }).map((r) => r.event),
    ['completed', 'completed'],
  );
  repo.close();
});

test('on a full disk a failed batch is counted and reported, never dropped silently', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    t.skip('needs root to mount a small tmpfs');
    return;
  }
  const errors: string[] = [];
  try {
    const log = new EventLog({
      logDb: join(dir, 'log.db'),
      logsDir: join(dir, 'logs'),
      inline: true,
      flushIntervalMs: 60_000,
      maxBatchRows: 50,
      onError: (e) => errors.push(e.message),
    });
    const big = 'x'.repeat(4000);
    for (let i = 0; i < 400; i++)
      log.emit({ event: 'queue_processed', tenant: 't', flow: 'f', payload: { big, i }, logLevel: 'full' });
    await log.close();
    assert.ok(log.droppedRows > 0, 'some rows could not be written');
    assert.ok(
      errors.some((m) => /\d+ event row\(s\) not written \(\d+ lost since start\)/.test(m)),
      errors.join('\n'),
    );
    const lost = errors.map((m) => Number(/\((\d+) lost since start\)/.exec(m)?.[1] ?? 0));
    assert.equal(Math.max(...lost), log.droppedRows, 'the last report counts every lost row');
  } finally {
    execFileSync('umount', [dir], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
});

test('after a full disk the daily file holds whole lines only: the row written next is not swallowed by a cut-short one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-full-'));
  if (!mountTmpfs(dir, 1)) {
    rmSync(dir, { recursive: true, force: true });
    t.skip('needs root to mount a small tmpfs');
    return;
  }
  try {
    const logsDir = join(dir, 'logs');
    const log = new EventLog({
      logDb: join(dir, 'log.db'),
      logsDir,
      inline: true,
      flushIntervalMs: 60_000,
      onError: () => undefined,
    });
    log.emit({ event: 'received', tenant: 't', flow: 'f', correlation_id: 'before', ts: '2026-03-01T00:00:00Z' });
    await log.flush();
    const ballast = join(dir, 'ballast');
    fillBut(ballast, dir, 8 * 1024);
    // One batch larger than the room left: its write to the file stops part way.
    for (let i = 0; i < 20; i++)
      log.emit({
        event: 'received',
        tenant: 't',
        flow: 'f',
        correlation_id: `full-${i}`,
        payload: { big: 'x'.repeat(4000) },
        logLevel: 'full',
        ts: '2026-03-01T00:00:01Z',
      });
    await log.flush();
    assert.ok(log.droppedRows > 0, 'the batch failed');
    rmSync(ballast);
    log.emit({ event: 'received', tenant: 't', flow: 'f', correlation_id: 'after', ts: '2026-03-01T00:00:02Z' });
    await log.close();
    const lines = readFileSync(join(logsDir, 'events-2026-03-01.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const ids = lines.map((l) => (JSON.parse(l) as { correlation_id: string }).correlation_id);
    assert.deepEqual([ids[0], ids.at(-1)], ['before', 'after']);
  } finally {
    await unmountTmpfs(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

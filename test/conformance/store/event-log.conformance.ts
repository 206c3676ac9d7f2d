/**
 * The event log contract (store/sqlite/sqlite-event-log-store.ts EventLogStore) and its writer, one behaviour per
 * test, run against every backend: rows emitted through EventLog read back with the same filters,
 * limits and order; trace rows; counts; retention's cut, in slices, and on PostgreSQL by dropping
 * whole day partitions; lookups by correlation id (on SQLite through per-block Bloom filters, here
 * with blocks of a few rows) against the answer of a full scan.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EventLog, EventLogTuning, LogEventInput, StoredEvent } from '../../../src/store/event-log/event-log.js';
import { TERMINAL_EVENTS, type EventQuery, type TraceQuery } from '../../../src/store/contracts/index.js';
import { correlationBlocks } from '../../../src/store/sqlite/sqlite-event-log-store.js';
import { seededRandom } from '../../helpers/seeded-random.js';
import type { BackendKind, StoreBackend } from './backend.js';
import { withShared, withStore } from './registry.conformance.js';

/** An instant `s` seconds after 2001-01-01T00:00:00Z, as EventLog writes them (seconds, `Z`). Days long past, so today's partitions never count. */
const at = (s: number): string => new Date(Date.UTC(2001, 0, 1) + s * 1000).toISOString().replace('.000Z', 'Z');
const HOUR = 3600;
const DAY = 24 * HOUR;

/** A store and a writer on it; both closed after `fn`. */
async function withLog(
  kind: BackendKind,
  fn: (s: StoreBackend, log: EventLog) => Promise<void>,
  opts: EventLogTuning = {},
): Promise<void> {
  await withStore(kind, async (s) => {
    const log = s.openEventWriter({ flushIntervalMs: 60_000, ...opts });
    try {
      await fn(s, log);
    } finally {
      await log.close();
    }
  });
}

/** Emits every event and waits until they are written. */
async function write(log: EventLog, events: readonly LogEventInput[]): Promise<void> {
  for (const e of events) log.emit(e);
  await log.flush();
}

/** `n` received rows of acme/orders, one a second from `from` (seconds). */
function received(n: number, from: number): LogEventInput[] {
  return Array.from({ length: n }, (_, i) => ({
    event: 'received' as const,
    ts: at(from + i),
    tenant: 'acme',
    flow: 'orders',
    correlation_id: `c${from + i}`,
  }));
}

const ids = (rows: readonly StoredEvent[]): number[] => rows.map((r) => r.id);
const tss = (rows: readonly StoredEvent[]): string[] => rows.map((r) => r.ts);

/** Five rows of two tenants, flows and statuses, one a second from at(0); plus a trace row. */
const MIXED: LogEventInput[] = [
  { event: 'received', ts: at(0), tenant: 'acme', flow: 'orders', correlation_id: 'c1', payload: { n: 1 } },
  { event: 'completed', ts: at(1), tenant: 'acme', flow: 'orders', correlation_id: 'c1', http_status: 200 },
  { event: 'received', ts: at(2), tenant: 'acme', flow: 'invoices', correlation_id: 'c2' },
  { event: 'completed', ts: at(3), tenant: 'acme', flow: 'invoices', correlation_id: 'c2', http_status: 502 },
  { event: 'access_denied', ts: at(4), tenant: 'globex', flow: 'orders', reason: 'no key', http_status: 401 },
  {
    event: 'step_traced',
    ts: at(5),
    tenant: 'acme',
    flow: 'orders',
    correlation_id: 'c1',
    step: 'map',
    payload: { out: 1 },
  },
];

export function eventLogConformance(kind: BackendKind): void {
  describe(`event log: writing and reading (${kind.name})`, () => {
    test('an emitted row reads back with every field, payload parsed and the flag a boolean', async () =>
      withLog(
        kind,
        async (s, log) => {
          await write(log, [
            {
              event: 'queue_processed',
              ts: at(7),
              correlation_id: 'c9',
              tenant: 'acme',
              flow: 'orders',
              step: 'ignored',
              payload: { a: [1, 'x'], password: 'p' },
              http_status: 201,
              outcome: 'fault_handled',
              trace_id: 'f'.repeat(32),
              duration_ms: 1234.5,
              failed_step: 'post',
              logLevel: 'full',
            },
            {
              event: 'access_denied',
              ts: at(8),
              reason: 'bad key',
              payload: 'x'.repeat(50),
              logLevel: 'payload_trimmed',
            },
          ]);
          const [denied, processed] = await s.eventLog.query();
          assert.ok(denied !== undefined && processed !== undefined);
          assert.ok(denied.id > processed.id);
          assert.deepEqual(
            { ...processed, id: 0 },
            {
              id: 0,
              ts: at(7),
              correlation_id: 'c9',
              tenant: 'acme',
              flow: 'orders',
              step: null,
              event: 'queue_processed',
              payload: { a: [1, 'x'], password: '***' },
              payload_truncated: false,
              http_status: 201,
              outcome: 'fault_handled',
              reason: null,
              trace_id: 'f'.repeat(32),
              duration_ms: 1234.5,
              failed_step: 'post',
            },
          );
          assert.deepEqual(
            { ...denied, id: 0 },
            {
              id: 0,
              ts: at(8),
              correlation_id: null,
              tenant: null,
              flow: null,
              step: null,
              event: 'access_denied',
              payload: `"${'x'.repeat(9)}`,
              payload_truncated: true,
              http_status: null,
              outcome: null,
              reason: 'bad key',
              trace_id: null,
              duration_ms: null,
              failed_step: null,
            },
          );
        },
        { payloadMaxBytes: () => 10 },
      ));

    test('rows come back newest first, or oldest first, by id', async () =>
      withLog(kind, async (s, log) => {
        await write(log, received(5, 0));
        const newest = await s.eventLog.query();
        assert.deepEqual(tss(newest), [at(4), at(3), at(2), at(1), at(0)]);
        assert.deepEqual(
          ids(newest),
          [...ids(newest)].sort((a, b) => b - a),
        );
        assert.deepEqual(tss(await s.eventLog.query({ oldestFirst: true })), [at(0), at(1), at(2), at(3), at(4)]);
      }));

    test('tenant, flow, event, correlation id and http status filter by exact match', async () =>
      withLog(kind, async (s, log) => {
        await write(log, MIXED);
        const pick = async (q: Parameters<StoreBackend['eventLog']['query']>[0]) =>
          tss(await s.eventLog.query({ ...q, oldestFirst: true }));
        assert.deepEqual(await pick({ tenant: 'acme' }), [at(0), at(1), at(2), at(3)]);
        assert.deepEqual(await pick({ tenant: 'acme', flow: 'orders' }), [at(0), at(1)]);
        assert.deepEqual(await pick({ flow: 'orders' }), [at(0), at(1), at(4)]);
        assert.deepEqual(await pick({ event: 'completed' }), [at(1), at(3)]);
        assert.deepEqual(await pick({ correlation_id: 'c2' }), [at(2), at(3)]);
        assert.deepEqual(await pick({ http_status: 502 }), [at(3)]);
        assert.deepEqual(await pick({ tenant: 'acme', flow: 'ord' }), []);
      }));

    test('a list of kinds keeps the rows of those kinds (the terminal rows, one per delivery), with the other filters and paging', async () =>
      withLog(kind, async (s, log) => {
        await write(log, [
          ...MIXED,
          { event: 'queue_enqueued', ts: at(6), tenant: 'acme', flow: 'orders', correlation_id: 'q1' },
          { event: 'queue_failed', ts: at(7), tenant: 'acme', flow: 'orders', failed_step: 'post' },
          {
            event: 'dlq_moved',
            ts: at(8),
            tenant: 'acme',
            flow: 'orders',
            correlation_id: 'q1',
            duration_ms: 0.25,
            failed_step: 'post',
          },
          { event: 'queue_processed', ts: at(9), tenant: 'acme', flow: 'invoices', duration_ms: 12 },
        ]);
        const terminal = await s.eventLog.query({ events: TERMINAL_EVENTS });
        assert.deepEqual(
          terminal.map((r) => [r.ts, r.event, r.duration_ms, r.failed_step]),
          [
            [at(9), 'queue_processed', 12, null],
            [at(8), 'dlq_moved', 0.25, 'post'],
            [at(3), 'completed', null, null],
            [at(1), 'completed', null, null],
          ],
        );
        const pick = async (q: Parameters<StoreBackend['eventLog']['query']>[0]) =>
          tss(await s.eventLog.query({ events: TERMINAL_EVENTS, ...q }));
        assert.deepEqual(await pick({ tenant: 'acme', flow: 'orders' }), [at(8), at(1)]);
        assert.deepEqual(await pick({ beforeId: terminal[1]!.id, limit: 1 }), [at(3)]);
        assert.deepEqual(await pick({ http_status_min: 500 }), [at(3)]);
        assert.deepEqual(await pick({ since: at(2), until: at(8) }), [at(8), at(3)]);
        assert.deepEqual(await pick({ event: 'received' }), [], 'an exact kind outside the list matches nothing');
        assert.deepEqual(await pick({ events: [] }), [], 'an empty list matches nothing');
        assert.deepEqual(await pick({ events: ['step_traced'] }), [], 'never trace rows');
      }));

    test('an http status range keeps the rows whose status lies in it, bounds included; rows without one never match', async () =>
      withLog(kind, async (s, log) => {
        await write(log, MIXED);
        const pick = async (q: Parameters<StoreBackend['eventLog']['query']>[0]) =>
          tss(await s.eventLog.query({ ...q, oldestFirst: true }));
        assert.deepEqual(await pick({ http_status_min: 400 }), [at(3), at(4)]);
        assert.deepEqual(await pick({ http_status_min: 400, http_status_max: 499 }), [at(4)]);
        assert.deepEqual(await pick({ http_status_min: 200, http_status_max: 401 }), [at(1), at(4)]);
        assert.deepEqual(await pick({ http_status_max: 200 }), [at(1)]);
        assert.deepEqual(await pick({ http_status_min: 400, event: 'completed' }), [at(3)]);
        assert.deepEqual(await pick({ http_status_min: 503 }), []);
      }));

    test('ordinary queries never return trace rows', async () =>
      withLog(kind, async (s, log) => {
        await write(log, MIXED);
        assert.deepEqual(await s.eventLog.query({ event: 'step_traced' }), []);
        assert.equal((await s.eventLog.query()).length, 5);
      }));

    test('limit caps the rows (default 100, at least 1); beforeId pages back; afterId follows', async () =>
      withLog(kind, async (s, log) => {
        await write(log, received(120, 0));
        assert.equal((await s.eventLog.query()).length, 100);
        assert.equal((await s.eventLog.query({ limit: 0 })).length, 1);
        const page1 = await s.eventLog.query({ limit: 3 });
        assert.deepEqual(tss(page1), [at(119), at(118), at(117)]);
        assert.deepEqual(tss(await s.eventLog.query({ limit: 2, beforeId: page1.at(-1)!.id })), [at(116), at(115)]);
        assert.deepEqual(tss(await s.eventLog.query({ afterId: page1.at(-1)!.id, oldestFirst: true })), [
          at(118),
          at(119),
        ]);
        assert.deepEqual(await s.eventLog.query({ afterId: page1[0]!.id }), []);
      }));

    test('since and until bound the rows by ts, until taking the whole prefix it names', async () =>
      withLog(kind, async (s, log) => {
        await write(log, [...received(3, 0), ...received(3, DAY)]);
        assert.deepEqual(tss(await s.eventLog.query({ since: at(1), oldestFirst: true })), [
          at(1),
          at(2),
          at(DAY),
          at(DAY + 1),
          at(DAY + 2),
        ]);
        assert.deepEqual(tss(await s.eventLog.query({ until: at(1), oldestFirst: true })), [at(0), at(1)]);
        assert.deepEqual(
          tss(await s.eventLog.query({ since: at(2), until: at(DAY).slice(0, 10), oldestFirst: true })),
          [at(2), at(DAY), at(DAY + 1), at(DAY + 2)],
        );
        assert.deepEqual(await s.eventLog.query({ since: at(2 * DAY) }), []);
      }));

    test('lastId is 0 on an empty log, then the newest id', async () =>
      withLog(kind, async (s, log) => {
        assert.equal(await s.eventLog.lastId(), 0);
        await write(log, received(3, 0));
        assert.equal(await s.eventLog.lastId(), (await s.eventLog.query({ limit: 1 }))[0]!.id);
      }));

    test('firstIdAtOrAfter finds the first row not older than the instant; one past the last when none is; 0 on an empty log', async () =>
      withLog(kind, async (s, log) => {
        assert.equal(await s.eventLog.firstIdAtOrAfter(at(0)), 0);
        await write(log, received(9, 0));
        const all = await s.eventLog.query({ oldestFirst: true });
        assert.equal(await s.eventLog.firstIdAtOrAfter(at(-5)), all[0]!.id);
        assert.equal(await s.eventLog.firstIdAtOrAfter(at(4)), all[4]!.id);
        assert.equal(await s.eventLog.firstIdAtOrAfter(`${at(4)}\uffff`), all[5]!.id);
        assert.equal(await s.eventLog.firstIdAtOrAfter(at(100)), all[8]!.id + 1);
      }));

    test('countsSince counts each kind from the instant on, and the completions of 400 or more', async () =>
      withLog(kind, async (s, log) => {
        await write(log, [
          ...MIXED,
          { event: 'completed', ts: at(6), http_status: 400 },
          { event: 'completed', ts: at(7), http_status: 399 },
        ]);
        assert.deepEqual(await s.eventLog.countsSince(at(1)), {
          byEvent: { completed: 4, received: 1, access_denied: 1, step_traced: 1 },
          failedCompletions: 2,
        });
        assert.deepEqual(await s.eventLog.countsSince(at(100)), { byEvent: {}, failedCompletions: 0 });
      }));

    test('countsSince equals a count of the rows from the instant on: at, before, inside and on a minute, over batches and kinds, and after retention', async () =>
      withLog(kind, async (s, log) => {
        // A row every 7 s from 00:01:00 to 00:05:54, seven kinds in turn, written in three batches.
        const kinds: Omit<LogEventInput, 'ts'>[] = [
          { event: 'received' },
          { event: 'completed', http_status: 200 },
          { event: 'completed', http_status: 502 },
          { event: 'queue_processed' },
          { event: 'completed', http_status: 404 },
          { event: 'access_denied' },
          { event: 'step_traced', step: 'map', payload: 1 },
        ];
        const rows: LogEventInput[] = Array.from({ length: 43 }, (_, k) => ({
          ...kinds[k % kinds.length]!,
          ts: at(60 + 7 * k),
        }));
        await write(log, rows.slice(0, 10));
        await write(log, rows.slice(10, 30));
        await write(log, rows.slice(30));
        const expected = (iso: string, cutoff = '') => {
          const byEvent: Record<string, number> = {};
          let failedCompletions = 0;
          for (const r of rows) {
            if (r.ts! < iso || r.ts! < cutoff) continue;
            byEvent[r.event] = (byEvent[r.event] ?? 0) + 1;
            if (r.event === 'completed' && r.http_status! >= 400) failedCompletions += 1;
          }
          return { byEvent, failedCompletions };
        };
        const instants = [
          ...[0, 59, 60, 61, 62, 66, 67, 90, 119, 120, 121, 150, 179, 180, 240, 299, 300, 353, 354, 355, 400].map(at),
          ...rows.map((r) => r.ts!),
          '2001-01-01T00:02', // a minute's prefix
          '2001-01-01T00', // an hour's
        ];
        for (const iso of instants) assert.deepEqual(await s.eventLog.countsSince(iso), expected(iso), iso);
        // Retention cuts inside the minute 00:02, in slices of 5 rows.
        const cutoff = at(150);
        assert.equal((await log.retainRows({ cutoffIso: cutoff, sliceRows: 5 })).rowsDeleted, 13);
        for (const iso of instants)
          assert.deepEqual(await s.eventLog.countsSince(iso), expected(iso, cutoff), `${iso} after retention`);
        await log.retainRows({ cutoffIso: at(1000), sliceRows: 5 });
        assert.deepEqual(await s.eventLog.countsSince(at(0)), { byEvent: {}, failedCompletions: 0 });
      }));
  });

  describe(`event log: trace rows (${kind.name})`, () => {
    test('queryTrace reads only trace rows, oldest first, with exact filters and inclusive ts bounds', async () =>
      withLog(kind, async (s, log) => {
        await write(log, [
          ...MIXED,
          {
            event: 'egress_traced',
            ts: at(6),
            tenant: 'acme',
            flow: 'orders',
            correlation_id: 'c1',
            step: 'call',
            payload: { headers: {}, body: 'b' },
            http_status: 200,
          },
          {
            event: 'step_traced',
            ts: at(7),
            tenant: 'acme',
            flow: 'invoices',
            correlation_id: 'c2',
            step: 'received',
            payload: 1,
          },
        ]);
        const all = await s.eventLog.queryTrace({}, true);
        assert.deepEqual(
          all.map((r) => [r.event, r.ts, r.step]),
          [
            ['step_traced', at(5), 'map'],
            ['egress_traced', at(6), 'call'],
            ['step_traced', at(7), 'received'],
          ],
        );
        assert.deepEqual(all[1]!.payload, { headers: {}, body: 'b' });
        assert.deepEqual(
          tss(await s.eventLog.queryTrace({ tenant: 'acme', flow: 'orders', correlation_id: 'c1' }, true)),
          [at(5), at(6)],
        );
        assert.deepEqual(tss(await s.eventLog.queryTrace({ since: at(6), until: at(7) }, true)), [at(6), at(7)]);
        assert.deepEqual(tss(await s.eventLog.queryTrace({ limit: 1 }, true)), [at(5)]);
        // Paging: after the last id of a page; with since, too (the id bound does not hide a row).
        const [first] = await s.eventLog.queryTrace({ limit: 1 }, true);
        assert.deepEqual(tss(await s.eventLog.queryTrace({ afterId: first!.id, limit: 1 }, true)), [at(6)]);
        assert.deepEqual(tss(await s.eventLog.queryTrace({ since: at(5), afterId: first!.id }, true)), [at(6), at(7)]);
      }));

    test('queryTrace pages past its 10,000-row ceiling with afterId, missing no row', async () =>
      withLog(kind, async (s, log) => {
        const n = 10_003;
        await write(
          log,
          Array.from({ length: n }, (_, i) => ({
            event: 'step_traced' as const,
            ts: at(i),
            tenant: 'acme',
            flow: 'orders',
            correlation_id: `c${i}`,
            step: 'received',
            payload: i,
          })),
        );
        const page = await s.eventLog.queryTrace({ since: at(0), limit: 100_000 }, true);
        assert.equal(page.length, 10_000);
        const rest = await s.eventLog.queryTrace({ since: at(0), afterId: page.at(-1)!.id, limit: 10_000 }, true);
        assert.deepEqual(
          rest.map((r) => r.payload),
          [10_000, 10_001, 10_002],
        );
      }));

    test('queryTrace returns nothing to a caller who may not read trace rows', async () =>
      withLog(kind, async (s, log) => {
        await write(log, MIXED);
        assert.deepEqual(await s.eventLog.queryTrace({}, false), []);
      }));
  });

  describe(`event log: retention (${kind.name})`, () => {
    test('retention deletes exactly the rows older than the cutoff, over several days, and nothing newer', async () =>
      withLog(kind, async (s, log) => {
        await write(log, [...received(4, 0), ...received(4, DAY + 12 * HOUR - 2), ...received(3, 2 * DAY)]);
        const cutoffIso = at(DAY + 12 * HOUR);
        const stats = await log.retainRows({ cutoffIso, sliceRows: 1000 });
        assert.equal(stats.rowsDeleted, 6);
        assert.equal(stats.stopped, false);
        assert.deepEqual(tss(await s.eventLog.query({ oldestFirst: true })), [
          at(DAY + 12 * HOUR),
          at(DAY + 12 * HOUR + 1),
          at(2 * DAY),
          at(2 * DAY + 1),
          at(2 * DAY + 2),
        ]);
        assert.equal((await log.retainRows({ cutoffIso, sliceRows: 1000 })).rowsDeleted, 0);
      }));

    test('a retention over many rows runs in slices: each stopped pass deletes one slice, the last what is left', async () =>
      withLog(kind, async (s, log) => {
        await write(log, [...received(50, DAY), ...received(5, DAY + HOUR)]);
        const deleted: number[] = [];
        for (let pass = 0; pass < 20; pass += 1) {
          // stopping() true from the start: the pass ends after its first slice
          const stats = await log.retainRows({ cutoffIso: at(DAY + HOUR), sliceRows: 7 }, () => true);
          if (stats.rowsDeleted === 0) break;
          deleted.push(stats.rowsDeleted);
        }
        assert.deepEqual(deleted, [7, 7, 7, 7, 7, 7, 7, 1]);
        assert.deepEqual(
          tss(await s.eventLog.query({ oldestFirst: true })),
          received(5, DAY + HOUR).map((e) => e.ts),
        );
      }));

    test('rows written while retention runs are kept', async () =>
      withLog(kind, async (s, log) => {
        await write(log, received(30, 0));
        const pass = log.retainRows({ cutoffIso: at(30), sliceRows: 4 });
        for (const e of received(10, 100)) log.emit(e);
        await Promise.all([pass, log.flush()]);
        assert.equal((await pass).rowsDeleted, 30);
        assert.deepEqual(
          tss(await s.eventLog.query({ oldestFirst: true })),
          received(10, 100).map((e) => e.ts),
        );
      }));

    if (kind.name === 'postgres') {
      test('a day wholly before the cutoff goes by dropping its partition; the cutoff day is cut row by row', async () =>
        withLog(kind, async (s, log) => {
          await write(log, [...received(5, 0), ...received(4, DAY + 6 * HOUR - 2)]);
          const partitions = async () =>
            (
              await s.eventSql(
                `SELECT relname FROM pg_class WHERE relname IN ('events_20010101', 'events_20010102') ORDER BY relname`,
              )
            ).map((r) => r.relname);
          assert.deepEqual(await partitions(), ['events_20010101', 'events_20010102']);
          const stats = await log.retainRows({ cutoffIso: at(DAY + 6 * HOUR), sliceRows: 1000 });
          assert.deepEqual(
            { rowsDeleted: stats.rowsDeleted, partitionsDropped: stats.partitionsDropped },
            { rowsDeleted: 7, partitionsDropped: 1 },
          );
          assert.deepEqual(await partitions(), ['events_20010102']);
          assert.deepEqual(tss(await s.eventLog.query({ oldestFirst: true })), [
            at(DAY + 6 * HOUR),
            at(DAY + 6 * HOUR + 1),
          ]);
        }));

      test('a row whose day has no partition lands in the default one and is moved when the partition is made', async () =>
        withLog(kind, async (s, log) => {
          await s.eventSql(
            `INSERT INTO events_default (ts, event) VALUES ('${at(10 * DAY)}', 'received'), ('not a date', 'received')`,
          );
          await write(log, received(2, 10 * DAY + 1));
          const count = async (table: string) => Number((await s.eventSql(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
          assert.equal(await count('events_20010111'), 3);
          assert.equal(await count('events_default'), 1);
          assert.deepEqual(tss(await s.eventLog.query({ oldestFirst: true })), [
            at(10 * DAY),
            'not a date',
            at(10 * DAY + 1),
            at(10 * DAY + 2),
          ]);
        }));
    }
  });

  describe(`event log: several nodes (${kind.name})`, () => {
    test('a follower reading after the last id it saw misses no row written by two nodes at once', async () =>
      withShared(kind, 2, async ([a, b]) => {
        const logs = [
          a!.openEventWriter({ flushIntervalMs: 1, maxBatchRows: 7 }),
          b!.openEventWriter({ flushIntervalMs: 1, maxBatchRows: 5 }),
        ];
        try {
          const seen: number[] = [];
          let done = false;
          const follow = (async () => {
            let after = 0;
            for (let last = false; !last;) {
              last = done; // one more read after the writers are flushed
              const rows = await a!.eventLog.query({ afterId: after, oldestFirst: true, limit: 10_000 });
              for (const r of rows) seen.push(r.id);
              after = rows.at(-1)?.id ?? after;
              await new Promise((resolve) => setTimeout(resolve, 1));
            }
          })();
          const emitting = logs.map(async (log, node) => {
            for (let i = 0; i < 150; i += 1) {
              log.emit({ event: 'received', ts: at(i), tenant: `node${node}`, flow: 'f' });
              if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
            }
            await log.flush();
          });
          await Promise.all(emitting);
          done = true;
          await follow;
          assert.equal(seen.length, 300);
          assert.deepEqual(seen, [...ids(await b!.eventLog.query({ oldestFirst: true, limit: 10_000 }))]);
        } finally {
          for (const log of logs) await log.close();
        }
      }));
  });

  correlationLookups(kind);
}

/** Blocks of correlation filters of BLOCK ids (SQLite's writer takes the size when it opens the log). */
const BLOCK = 16;

/** `fn` with the SQLite writer's blocks of BLOCK ids (no effect on PostgreSQL). */
async function withSmallBlocks(fn: () => Promise<void>): Promise<void> {
  const saved = correlationBlocks.ids;
  correlationBlocks.ids = BLOCK;
  try {
    await fn();
  } finally {
    correlationBlocks.ids = saved;
  }
}

const TRACE = new Set(['step_traced', 'egress_traced']);

/** query()'s answer computed from every row (the full scan): exact filters, id and ts bounds, order, limit. */
function scanQuery(all: readonly StoredEvent[], q: EventQuery): number[] {
  const rows = all.filter(
    (r) =>
      !TRACE.has(r.event) &&
      (q.tenant === undefined || r.tenant === q.tenant) &&
      (q.correlation_id === undefined || r.correlation_id === q.correlation_id) &&
      (q.event === undefined || r.event === q.event) &&
      (q.beforeId === undefined || r.id < q.beforeId) &&
      (q.afterId === undefined || r.id > q.afterId) &&
      (q.since === undefined || r.ts >= q.since) &&
      (q.until === undefined || r.ts <= q.until),
  );
  const ordered = q.oldestFirst === true ? rows : rows.reverse();
  return ids(ordered.slice(0, q.limit ?? 100));
}

/** queryTrace()'s answer computed from every row, oldest first. */
function scanTrace(all: readonly StoredEvent[], q: TraceQuery): number[] {
  const rows = all.filter(
    (r) =>
      TRACE.has(r.event) &&
      (q.tenant === undefined || r.tenant === q.tenant) &&
      (q.correlation_id === undefined || r.correlation_id === q.correlation_id) &&
      (q.afterId === undefined || r.id > q.afterId) &&
      (q.since === undefined || r.ts >= q.since) &&
      (q.until === undefined || r.ts <= q.until),
  );
  return ids(rows.slice(0, q.limit ?? 1000));
}

/** Every row, trace rows too, oldest first. */
async function everyRow(s: StoreBackend): Promise<StoredEvent[]> {
  const rows = [
    ...(await s.eventLog.query({ oldestFirst: true, limit: 10_000 })),
    ...(await s.eventLog.queryTrace({ limit: 10_000 }, true)),
  ];
  return rows.sort((a, b) => a.id - b.id);
}

/**
 * `n` rows from second `from`: deliveries of two or three rows (received, a step trace now and
 * then, completed) under ids `${prefix}${d}`, every 10th row of a delivery `spread` (in every block).
 */
function deliveries(n: number, from: number, prefix: string): LogEventInput[] {
  const out: LogEventInput[] = [];
  for (let d = 0; out.length < n; d++) {
    const id = out.length % 10 === 0 ? 'spread' : `${prefix}${d}`;
    const base = { tenant: d % 3 === 0 ? 'globex' : 'acme', flow: 'orders', correlation_id: id };
    out.push({ ...base, event: 'received', ts: at(from + out.length) });
    if (d % 4 === 0) out.push({ ...base, event: 'step_traced', ts: at(from + out.length), step: 'map', payload: d });
    out.push({ ...base, event: 'completed', ts: at(from + out.length), http_status: 200 });
  }
  return out.slice(0, n);
}

/** Every lookup by correlation id of `cids`, in both orders, with limits and id pages, equals the full scan's. */
async function assertLookups(s: StoreBackend, cids: readonly string[]): Promise<void> {
  const all = await everyRow(s);
  const mid = all[Math.floor(all.length / 2)]?.id ?? 0;
  for (const correlation_id of cids) {
    for (const q of [
      { correlation_id },
      { correlation_id, oldestFirst: true },
      { correlation_id, limit: 1 },
      { correlation_id, limit: 2, oldestFirst: true },
      { correlation_id, beforeId: mid },
      { correlation_id, afterId: mid, oldestFirst: true },
    ] satisfies EventQuery[]) {
      assert.deepEqual(ids(await s.eventLog.query(q)), scanQuery(all, q), `${JSON.stringify(q)}`);
    }
    for (const q of [
      { correlation_id },
      { correlation_id, limit: 1 },
      { correlation_id, afterId: mid },
    ] satisfies TraceQuery[]) {
      assert.deepEqual(ids(await s.eventLog.queryTrace(q, true)), scanTrace(all, q), `trace ${JSON.stringify(q)}`);
    }
  }
}

/** Lookups by correlation id (part of eventLogConformance). */
function correlationLookups(kind: BackendKind): void {
  describe(`event log: lookups by correlation id (${kind.name})`, () => {
    test("across many blocks: a delivery's rows, an id in every block, page by page, trace rows too", async () =>
      withSmallBlocks(() =>
        withLog(
          kind,
          async (s, log) => {
            const rows = deliveries(20 * BLOCK + 5, 0, 'd');
            await write(log, rows);
            if (kind.name === 'sqlite') {
              const blooms = await s.eventSql('SELECT first_id, last_id FROM correlation_blooms ORDER BY first_id');
              assert.equal(blooms.length, 20);
              for (const b of blooms) assert.equal(Number(b.last_id) - Number(b.first_id) + 1, BLOCK);
            }
            await assertLookups(s, ['spread', 'd0', 'd1', 'd7', 'd40', 'd99', 'd100']);
            // "spread" page by page, newest first: every row once, in order.
            const paged: number[] = [];
            let page = await s.eventLog.query({ correlation_id: 'spread', limit: 3 });
            while (page.length > 0) {
              paged.push(...ids(page));
              page = await s.eventLog.query({ correlation_id: 'spread', limit: 3, beforeId: page.at(-1)!.id });
            }
            assert.deepEqual(paged, scanQuery(await everyRow(s), { correlation_id: 'spread', limit: 10_000 }));
          },
          { maxBatchRows: 7 },
        ),
      ));

    test('rows past the last complete block (the tail) are found, before and after their block completes', async () =>
      withSmallBlocks(() =>
        withLog(kind, async (s, log) => {
          await write(log, deliveries(3 * BLOCK, 0, 'a'));
          await write(log, [{ event: 'received', ts: at(100), tenant: 'acme', flow: 'f', correlation_id: 'tail-1' }]);
          assert.deepEqual(tss(await s.eventLog.query({ correlation_id: 'tail-1' })), [at(100)]);
          await write(log, deliveries(BLOCK, 101, 'b'));
          assert.deepEqual(tss(await s.eventLog.query({ correlation_id: 'tail-1' })), [at(100)]);
          await assertLookups(s, ['tail-1', 'a1', 'b1', 'spread']);
        }),
      ));

    test('after retention: the rows left are found, the deleted ones not', async () =>
      withSmallBlocks(() =>
        withLog(kind, async (s, log) => {
          await write(log, [...deliveries(5 * BLOCK + 3, 0, 'old'), ...deliveries(3 * BLOCK + 5, DAY, 'new')]);
          const stats = await log.retainRows({ cutoffIso: at(DAY), sliceRows: 7 });
          assert.equal(stats.rowsDeleted, 5 * BLOCK + 3);
          assert.deepEqual(await s.eventLog.query({ correlation_id: 'old1' }), []);
          await assertLookups(s, ['old1', 'new0', 'new1', 'new9', 'spread']);
          if (kind.name === 'sqlite') {
            const [{ first }] = (await s.eventSql('SELECT min(id) AS first FROM events')) as [{ first: number }];
            const below = await s.eventSql(`SELECT first_id FROM correlation_blooms WHERE last_id < ${first}`);
            assert.deepEqual(below, [], 'no filter of a block wholly deleted');
          }
          await write(log, deliveries(2 * BLOCK, DAY + HOUR, 'later'));
          await assertLookups(s, ['new1', 'later1', 'spread']);
        }),
      ));

    test('after a reopen mid-block (and filters lost in a crash) every row is still found', async () =>
      withSmallBlocks(() =>
        withStore(kind, async (s) => {
          let log = s.openEventWriter({ flushIntervalMs: 60_000, maxBatchRows: 5 });
          await write(log, deliveries(2 * BLOCK + 9, 0, 'before'));
          await log.close();
          if (kind.name === 'sqlite')
            await s.eventSql('DELETE FROM correlation_blooms WHERE first_id > 1 RETURNING first_id');
          log = s.openEventWriter({ flushIntervalMs: 60_000, maxBatchRows: 5 });
          try {
            await write(log, deliveries(2 * BLOCK, 100, 'after'));
            if (kind.name === 'sqlite') {
              const blooms = await s.eventSql('SELECT first_id, last_id FROM correlation_blooms ORDER BY first_id');
              assert.equal(blooms.length, 4);
            }
            await assertLookups(s, ['before0', 'before20', 'before22', 'before23', 'after0', 'after3', 'spread']);
          } finally {
            await log.close();
          }
        }),
      ));

    test('ids in no block: nothing, whatever the bounds', async () =>
      withSmallBlocks(() =>
        withLog(kind, async (s, log) => {
          await write(log, deliveries(10 * BLOCK, 0, 'x'));
          for (let i = 0; i < 50; i++) {
            assert.deepEqual(await s.eventLog.query({ correlation_id: `absent-${i}` }), []);
            assert.deepEqual(await s.eventLog.queryTrace({ correlation_id: `absent-${i}` }, true), []);
          }
          assert.deepEqual(await s.eventLog.query({ correlation_id: 'x1', beforeId: 1 }), []);
          assert.deepEqual(await s.eventLog.query({ correlation_id: 'x1', afterId: 1e9 }), []);
          assert.deepEqual(await s.eventLog.queryTrace({ correlation_id: 'x1' }, false), []);
        }),
      ));

    test('property: for random ids and bounds, a lookup answers what a full scan does', async () =>
      withSmallBlocks(() =>
        withLog(
          kind,
          async (s, log) => {
            const rnd = seededRandom(20260529);
            const pool = Array.from({ length: 60 }, (_, i) =>
              i % 3 === 0
                ? `req-${Math.floor(rnd() * 1e9).toString(36)}`
                : Array.from({ length: 4 }, () =>
                    Math.floor(rnd() * 2 ** 32)
                      .toString(16)
                      .padStart(8, '0'),
                  ).join('-'),
            );
            const rows: LogEventInput[] = [];
            for (let i = 0; i < 30 * BLOCK + 7; i++) {
              const id = rnd() < 0.05 ? undefined : pool[Math.floor(rnd() * rnd() * pool.length)]!;
              const trace = rnd() < 0.15;
              rows.push({
                event: trace ? 'step_traced' : rnd() < 0.5 ? 'received' : 'completed',
                ts: at(Math.floor(i / 2)),
                tenant: rnd() < 0.5 ? 'acme' : 'globex',
                flow: 'orders',
                ...(id === undefined ? {} : { correlation_id: id }),
                ...(trace ? { step: 's', payload: i } : {}),
              });
            }
            await write(log, rows);
            const all = await everyRow(s);
            const last = all.at(-1)!.id;
            const first = all[0]!.id;
            const bound = () => first + Math.floor(rnd() * (last - first + 2));
            for (let n = 0; n < 300; n++) {
              const q: EventQuery = {
                correlation_id: rnd() < 0.1 ? `none-${n}` : pool[Math.floor(rnd() * pool.length)]!,
              };
              if (rnd() < 0.3) q.tenant = rnd() < 0.5 ? 'acme' : 'globex';
              if (rnd() < 0.3) q.beforeId = bound();
              if (rnd() < 0.3) q.afterId = bound();
              if (rnd() < 0.2) q.since = at(Math.floor((rnd() * rows.length) / 2));
              if (rnd() < 0.2) q.until = at(Math.floor((rnd() * rows.length) / 2));
              if (rnd() < 0.5) q.oldestFirst = true;
              q.limit = 1 + Math.floor(rnd() * 40);
              assert.deepEqual(ids(await s.eventLog.query(q)), scanQuery(all, q), JSON.stringify(q));
              const t: TraceQuery = { correlation_id: q.correlation_id, limit: q.limit };
              if (q.tenant !== undefined) t.tenant = q.tenant;
              if (q.afterId !== undefined) t.afterId = q.afterId;
              if (q.since !== undefined) t.since = q.since;
              if (q.until !== undefined) t.until = q.until;
              assert.deepEqual(
                ids(await s.eventLog.queryTrace(t, true)),
                scanTrace(all, t),
                `trace ${JSON.stringify(t)}`,
              );
            }
          },
          { maxBatchRows: 13 },
        ),
      ));
  });
}

/**
 * The per-minute rollups (store/contracts/rollups.ts), run against every backend: rows added by the
 * event log's writer sum per key, read back per minute, per hour or for a whole window, by flow or
 * over all flows, delivery rows apart from step rows; two nodes adding to one key; retention's cut.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LATENCY_BUCKETS,
  latencyBucket,
  type RollupCount,
  type RollupQuery,
  type RollupRow,
} from '../../../src/store/contracts/index.js';
import type { EventLog } from '../../../src/store/event-log/event-log.js';
import type { BackendKind, StoreBackend } from './backend.js';
import { withShared, withStore } from './registry.conformance.js';

/** 2001-01-01T00:00Z in whole minutes: long past, so no live row of the machine counts. */
const T0 = Date.UTC(2001, 0, 1) / 60_000;

/** A row of `count` runs at `ms` each, `failures` of them failed. */
function row(
  minute: number,
  flow: string,
  door: string,
  step: string,
  count: number,
  ms: number,
  failures = 0,
  tenant = 'acme',
): RollupRow {
  const buckets = new Array<number>(LATENCY_BUCKETS).fill(0);
  buckets[latencyBucket(ms)] = count;
  return { minute: T0 + minute, tenant, flow, door, step, count, failures, sumMs: count * ms, buckets };
}

async function withLog(kind: BackendKind, fn: (s: StoreBackend, log: EventLog) => Promise<void>): Promise<void> {
  await withStore(kind, async (s) => {
    const log = s.openEventWriter({ flushIntervalMs: 60_000 });
    try {
      await fn(s, log);
    } finally {
      await log.close();
    }
  });
}

/** Points as `minute-offset flow door/step count failures` lines, easy to compare. */
const lines = (points: readonly RollupRow[]): string[] =>
  points.map((p) => `${p.minute - T0} ${p.tenant}/${p.flow} ${p.door}${p.step} ${p.count} ${p.failures}`);

/** What a RollupCount carries: its key and its counts, nothing read from the histogram. */
const COUNT_KEYS = ['minute', 'tenant', 'flow', 'door', 'step', 'count', 'failures'];

export function rollupsConformance(kind: BackendKind): void {
  describe(`rollups (${kind.name})`, () => {
    test('rows of one key add up, across writes; other keys stay apart', async () =>
      withLog(kind, async (s, log) => {
        log.writeRollups([row(0, 'orders', 'http', '', 3, 4, 1), row(0, 'orders', 'queue', '', 2, 40)]);
        log.writeRollups([row(0, 'orders', 'http', '', 2, 4, 1), row(1, 'orders', 'http', '', 1, 900)]);
        await log.flush();
        const points = await s.eventLog.rollups({
          fromMinute: T0,
          toMinute: T0 + 60,
          level: 'delivery',
          per: 'minute',
          byFlow: true,
        });
        assert.deepEqual(lines(points), [
          '0 acme/orders http 5 2',
          '0 acme/orders queue 2 0',
          '1 acme/orders http 1 0',
        ]);
        const http0 = points[0]!;
        assert.equal(http0.sumMs, 20);
        assert.equal(http0.buckets[latencyBucket(4)], 5);
        assert.equal(
          http0.buckets.reduce((a, b) => a + b, 0),
          5,
        );
      }));

    test('read per hour, for a whole window, over all flows or one; delivery rows apart from step rows', async () =>
      withLog(kind, async (s, log) => {
        log.writeRollups([
          row(0, 'orders', 'http', '', 2, 3),
          row(59, 'orders', 'http', '', 1, 3),
          row(60, 'orders', 'http', '', 4, 3),
          row(5, 'invoices', 'http', '', 7, 3, 2),
          row(5, 'invoices', '', 'check', 7, 1, 2),
          row(5, 'invoices', '', 'answer', 5, 2),
          row(5, 'orders', 'http', '', 1, 3, 0, 'globex'),
          // The all-flows rows the recorder writes beside them (tenant and flow '').
          row(0, '', 'http', '', 3, 3, 0, ''),
          row(5, '', 'http', '', 8, 3, 2, ''),
          row(60, '', 'http', '', 4, 3, 0, ''),
        ]);
        await log.flush();
        const range = { fromMinute: T0, toMinute: T0 + 120 };
        assert.deepEqual(lines(await s.eventLog.rollups({ ...range, level: 'delivery', per: 'hour' })), [
          '0 / http 11 2',
          '60 / http 4 0',
        ]);
        assert.deepEqual(
          lines(await s.eventLog.rollups({ ...range, level: 'delivery', per: 'window', byFlow: true, tenant: 'acme' })),
          ['0 acme/invoices http 7 2', '0 acme/orders http 7 0'],
        );
        assert.deepEqual(
          lines(await s.eventLog.rollups({ ...range, level: 'step', per: 'window', tenant: 'acme', flow: 'invoices' })),
          ['0 / answer 5 0', '0 / check 7 2'],
        );
        // The range is [from, to): minute 60 is outside a window ending there.
        assert.deepEqual(
          lines(await s.eventLog.rollups({ fromMinute: T0, toMinute: T0 + 60, level: 'delivery', per: 'window' })),
          ['0 / http 11 2'],
        );
        assert.deepEqual(
          await s.eventLog.rollups({ fromMinute: T0 + 500, toMinute: T0 + 600, level: 'delivery', per: 'minute' }),
          [],
        );
      }));

    test('rollupCounts answers the points of rollups, counts alone, for every shape of query; retention cuts them too', async () =>
      withLog(kind, async (s, log) => {
        log.writeRollups([
          row(0, 'orders', 'http', '', 2, 3, 1),
          row(0, 'orders', 'queue', '', 4, 3, 1),
          row(1, 'orders', 'queue', '', 1, 3),
          row(59, 'orders', 'http', '', 1, 3),
          row(60, 'orders', 'http', '', 4, 3, 2),
          row(5, 'invoices', 'http', '', 7, 3, 2),
          row(5, 'invoices', '', 'check', 7, 1, 2),
          row(5, 'invoices', '', 'answer', 5, 2),
          row(5, 'orders', 'queue', '', 1, 3, 1, 'globex'),
          row(0, '', 'http', '', 2, 3, 1, ''),
          row(0, '', 'queue', '', 4, 3, 1, ''),
          row(5, '', 'http', '', 7, 3, 2, ''),
          row(5, '', 'queue', '', 1, 3, 1, ''),
          row(60, '', 'http', '', 4, 3, 2, ''),
        ]);
        // Added twice: the counts of a key add up in the index as in the table.
        log.writeRollups([row(1, 'orders', 'queue', '', 2, 3, 1), row(1, '', 'queue', '', 2, 3, 1, '')]);
        await log.flush();
        const range = { fromMinute: T0, toMinute: T0 + 120 };
        const queries: RollupQuery[] = [
          { ...range, level: 'delivery', per: 'window', byFlow: true },
          { ...range, level: 'delivery', per: 'minute', byFlow: true, door: 'queue' },
          { ...range, level: 'delivery', per: 'minute', door: 'queue' },
          { ...range, level: 'delivery', per: 'hour' },
          { ...range, level: 'delivery', per: 'minute', tenant: 'acme', flow: 'orders' },
          { ...range, level: 'delivery', per: 'window', byFlow: true, tenant: 'globex' },
          { ...range, level: 'step', per: 'window', tenant: 'acme', flow: 'invoices' },
          { ...range, level: 'step', per: 'minute', byFlow: true },
          { fromMinute: T0 + 1, toMinute: T0 + 60, level: 'delivery', per: 'window', byFlow: true },
        ];
        const counts = (points: readonly RollupCount[]) =>
          points.map((p) => `${p.minute - T0} ${p.tenant}/${p.flow} ${p.door}${p.step} ${p.count} ${p.failures}`);
        for (const q of queries) {
          const read = await s.eventLog.rollupCounts(q);
          assert.deepEqual(counts(read), lines(await s.eventLog.rollups(q)), JSON.stringify(q));
          for (const p of read) assert.deepEqual(Object.keys(p).sort(), [...COUNT_KEYS].sort());
        }
        assert.deepEqual(
          counts(await s.eventLog.rollupCounts({ ...range, level: 'delivery', per: 'window', byFlow: true })),
          [
            '0 acme/invoices http 7 2',
            '0 acme/orders http 7 3',
            '0 acme/orders queue 7 2',
            '0 globex/orders queue 1 1',
          ],
        );
        assert.deepEqual(
          counts(
            await s.eventLog.rollupCounts({ ...range, level: 'delivery', per: 'minute', byFlow: true, door: 'queue' }),
          ),
          ['0 acme/orders queue 4 1', '1 acme/orders queue 3 1', '5 globex/orders queue 1 1'],
        );
        await log.retainRows({ cutoffIso: new Date((T0 + 5) * 60_000).toISOString(), sliceRows: 1000 });
        assert.deepEqual(
          counts(await s.eventLog.rollupCounts({ ...range, level: 'delivery', per: 'window', byFlow: true })),
          ['0 acme/invoices http 7 2', '0 acme/orders http 5 2', '0 globex/orders queue 1 1'],
        );
      }));

    test('two nodes adding to the same keys: every count is kept', async () =>
      withShared(kind, 2, async ([a, b]) => {
        const logs = [a!.openEventWriter({ flushIntervalMs: 60_000 }), b!.openEventWriter({ flushIntervalMs: 60_000 })];
        try {
          await Promise.all(
            logs.map(async (log) => {
              for (let i = 0; i < 20; i += 1) {
                log.writeRollups([row(i % 3, 'orders', 'http', '', 1, 5), row(i % 3, 'orders', '', 'check', 1, 1)]);
                if (i % 5 === 0) await log.flush();
              }
              await log.flush();
            }),
          );
          const points = await a!.eventLog.rollups({
            fromMinute: T0,
            toMinute: T0 + 3,
            level: 'step',
            per: 'window',
          });
          assert.deepEqual(lines(points), ['0 / check 40 0']);
        } finally {
          for (const log of logs) await log.close();
        }
      }));

    test("retention deletes the minutes before the cutoff's minute with the rows, and keeps the rest", async () =>
      withLog(kind, async (s, log) => {
        log.writeRollups([
          row(0, 'orders', 'http', '', 1, 3),
          row(9, 'orders', 'http', '', 1, 3),
          row(10, 'orders', 'http', '', 1, 3),
        ]);
        await log.flush();
        const cutoffIso = new Date((T0 + 10) * 60_000).toISOString();
        await log.retainRows({ cutoffIso, sliceRows: 1000 });
        const left = await s.eventLog.rollups({
          tenant: 'acme',
          fromMinute: T0,
          toMinute: T0 + 60,
          level: 'delivery',
          per: 'minute',
        });
        assert.deepEqual(lines(left), ['10 / http 1 0']);
      }));

    test('queue samples: the last sample of a minute is kept; read by range, tenant and flow; retention cuts them', async () =>
      withLog(kind, async (s, log) => {
        const sample = (minute: number, flow: string, backlog: number, dead = 0) => ({
          minute: T0 + minute,
          tenant: 'acme',
          flow,
          backlog,
          retries: 0,
          processed: 10 - backlog,
          dead,
        });
        log.writeQueueSamples([sample(0, 'orders', 5), sample(0, 'invoices', 1)]);
        log.writeQueueSamples([sample(0, 'orders', 3, 1), sample(1, 'orders', 2, 1), sample(30, 'orders', 0, 2)]);
        await log.flush();
        const read = async (q: { flow?: string; from: number; to: number }) =>
          (
            await s.eventLog.queueSamples({
              tenant: 'acme',
              flow: q.flow,
              fromMinute: T0 + q.from,
              toMinute: T0 + q.to,
            })
          ).map((x) => `${x.minute - T0} ${x.flow} ${x.backlog} ${x.processed} ${x.dead}`);
        assert.deepEqual(await read({ from: 0, to: 60 }), [
          '0 invoices 1 9 0',
          '0 orders 3 7 1',
          '1 orders 2 8 1',
          '30 orders 0 10 2',
        ]);
        assert.deepEqual(await read({ flow: 'orders', from: 1, to: 30 }), ['1 orders 2 8 1']);
        await log.retainRows({ cutoffIso: new Date((T0 + 1) * 60_000).toISOString(), sliceRows: 1000 });
        assert.deepEqual(await read({ from: 0, to: 60 }), ['1 orders 2 8 1', '30 orders 0 10 2']);
      }));
  });
}

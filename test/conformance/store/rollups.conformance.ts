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
  type EdgeRead,
  type EventLogStore,
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

/**
 * A deterministic day-part of rollups for flowTotals: minutes 0..79 (T0 is a block's first minute),
 * three flows in two tenants over four doors, some minutes skipped, with step rows and the all-flows
 * rows beside them (neither counted by flowTotals). Three writes: the later ones add to keys of the first.
 */
function blockRows(): RollupRow[][] {
  const flows: [string, string, string[]][] = [
    ['acme', 'orders', ['http', 'queue']],
    ['acme', 'invoices', ['http', 'soap']],
    ['globex', 'orders', ['grpc']],
  ];
  const writes: RollupRow[][] = [[], [], []];
  for (let m = 0; m < 80; m += 1) {
    flows.forEach(([tenant, flow, doors], f) => {
      if ((m + f) % 7 === 3) return; // a minute the flow did not run
      doors.forEach((door, d) => {
        const count = 1 + ((m * 7 + f * 3 + d) % 5);
        const failures = (m + d) % 3 === 0 ? 1 : 0;
        writes[0]!.push(row(m, flow, door, '', count, 3, failures, tenant));
        if (m % 4 === f) writes[1]!.push(row(m, flow, door, '', 2, 3, 1, tenant));
        if (m % 9 === d) writes[2]!.push(row(m, flow, door, '', 1, 3, 0, tenant));
      });
      writes[0]!.push(row(m, flow, '', 'check', 5, 1, 1, tenant));
    });
    writes[0]!.push(row(m, '', 'http', '', 50, 3, 5, ''));
  }
  return writes;
}

/** Every flow's deliveries of a window summed from the minute rollups, as `tenant/flow count failures`. */
async function summedMinutes(log: EventLogStore, from: number, to: number): Promise<string[]> {
  const totals = new Map<string, { count: number; failures: number }>();
  const counts = await log.rollupCounts({
    fromMinute: T0 + from,
    toMinute: T0 + to,
    level: 'delivery',
    per: 'window',
    byFlow: true,
  });
  for (const r of counts) {
    const t = totals.get(`${r.tenant}/${r.flow}`) ?? { count: 0, failures: 0 };
    t.count += r.count;
    t.failures += r.failures;
    totals.set(`${r.tenant}/${r.flow}`, t);
  }
  return [...totals]
    .filter(([, t]) => t.count !== 0 || t.failures !== 0)
    .map(([k, t]) => `${k} ${t.count} ${t.failures}`)
    .sort();
}

const EDGES: ({ lead: EdgeRead; trail: EdgeRead } | undefined)[] = [
  undefined,
  { lead: 'add', trail: 'add' },
  { lead: 'add', trail: 'subtract' },
  { lead: 'subtract', trail: 'add' },
  { lead: 'subtract', trail: 'subtract' },
];

/** flowTotals of every window against the minutes summed, with the store's own edges and each forced. */
async function assertFlowTotals(log: EventLogStore, windows: readonly [number, number][]): Promise<void> {
  for (const [from, to] of windows) {
    const want = await summedMinutes(log, from, to);
    for (const edges of EDGES) {
      const got = (await log.flowTotals(T0 + from, T0 + to, edges)).map(
        (t) => `${t.tenant}/${t.flow} ${t.count} ${t.failures}`,
      );
      assert.deepEqual(got.slice().sort(), want, `[${from}, ${to}) ${JSON.stringify(edges)}`);
      assert.deepEqual(got, got.slice().sort(), 'by tenant and flow');
    }
  }
}

/**
 * Windows spanning 0 whole blocks (inside one, or across one boundary), 1, 2 and 7, aligned to
 * blocks or not at either edge, empty, and past the rows at either end.
 */
const WINDOWS: [number, number][] = [
  [0, 10],
  [10, 30],
  [0, 70],
  [10, 80],
  [3, 7],
  [12, 19],
  [20, 21],
  [3, 17],
  [8, 12],
  [5, 25],
  [10, 25],
  [5, 20],
  [13, 73],
  [7, 80],
  [1, 79],
  [6, 94],
  [-15, 12],
  [70, 90],
  [85, 95],
  [30, 30],
  [0, 80],
];

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
    test('flowTotals equals the minute rollups summed, for windows aligned to blocks or not, spanning 0 to 7 blocks', async () =>
      withLog(kind, async (s, log) => {
        for (const rows of blockRows()) {
          log.writeRollups(rows);
          await log.flush();
        }
        await assertFlowTotals(s.eventLog, WINDOWS);
        // Written again: every key of the window added to, the blocks with them.
        for (const rows of blockRows()) log.writeRollups(rows);
        await log.flush();
        await assertFlowTotals(s.eventLog, WINDOWS);
        const hour = await s.eventLog.flowTotals(T0 + 13, T0 + 73);
        assert.deepEqual(
          hour.map((t) => `${t.tenant}/${t.flow}`),
          ['acme/invoices', 'acme/orders', 'globex/orders'],
        );
        assert.deepEqual(await s.eventLog.flowTotals(T0 + 100, T0 + 160), []);
        assert.deepEqual(await s.eventLog.flowTotals(T0 + 30, T0 + 30), []);
      }));

    test('flowTotals after retention cuts inside a block: windows after the cut stay exact, blocks before it go', async () =>
      withLog(kind, async (s, log) => {
        for (const rows of blockRows()) log.writeRollups(rows);
        await log.flush();
        const retain = (minute: number) =>
          log.retainRows({ cutoffIso: new Date((T0 + minute) * 60_000).toISOString(), sliceRows: 1000 });
        const after = (cut: number): [number, number][] => [
          [cut, cut + 1],
          [cut, 40],
          [cut + 2, 33],
          [cut, 80],
          [cut + 1, cut + 61],
          [30, 80],
          [0, 80],
          [cut - 3, 50],
        ];
        await retain(23);
        await assertFlowTotals(s.eventLog, after(23));
        const blocksBefore = async (minute: number) =>
          Number((await s.eventSql(`SELECT count(*) AS n FROM rollup_blocks WHERE block < ${T0 + minute}`))[0]!.n);
        assert.equal(await blocksBefore(20), 0);
        assert.ok((await blocksBefore(30)) > 0, "the cut's block is kept");
        // A later cut inside the same block, then one on a block's first minute.
        await retain(27);
        await assertFlowTotals(s.eventLog, after(27));
        // Rows added to the cut's block after the cut count in it.
        log.writeRollups([row(28, 'orders', 'http', '', 4, 3, 1), row(25, 'orders', 'http', '', 3, 3, 1)]);
        await log.flush();
        await assertFlowTotals(s.eventLog, [...after(27), [25, 30], [20, 40]]);
        await retain(40);
        assert.equal(await blocksBefore(40), 0);
        await assertFlowTotals(s.eventLog, after(40));
      }));

    test('flowTotals on a log upgraded by the blocks migration: the rollups written before it are in the blocks', async () => {
      const cols = 'minute, tenant, flow, door, step, count, failures, sum_ms';
      const values = blockRows()[0]!.map(
        (r) =>
          `(${r.minute}, '${r.tenant}', '${r.flow}', '${r.door}', '${r.step}', ${r.count}, ${r.failures}, ${r.sumMs})`,
      );
      const s = await kind.openUpgradedFromBeforeBlocks([`INSERT INTO rollups (${cols}) VALUES ${values.join(', ')}`]);
      try {
        await assertFlowTotals(s.eventLog, WINDOWS);
        const log = s.openEventWriter({ flushIntervalMs: 60_000 });
        try {
          for (const rows of blockRows().slice(1)) log.writeRollups(rows);
          await log.flush();
          await assertFlowTotals(s.eventLog, WINDOWS);
        } finally {
          await log.close();
        }
      } finally {
        await s.close();
      }
    });
  });
}

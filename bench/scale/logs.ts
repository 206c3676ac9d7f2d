/**
 * Event-log part of `npm run bench:scale`: a log database of 1,000,000 and of 10,000,000 rows,
 * written in-process straight into the real schema (src/store/sqlite/migrations/log.ts) in big
 * transactions, their timestamps spread evenly over the last log_retention_days + 1 days, so a
 * retention cycle has a day's rows to delete.
 *
 * A real `svc serve` runs on the state directory with its retention interval shortened through the
 * test-only SVC_TEST_LOG_RETENTION_INTERVAL_MS (src/housekeeping/intervals.ts) and
 * log_retention_days first set past the oldest row, so its cycles find nothing. Under one
 * continuous /run load (the event writer busy with the two rows of each request): an idle window,
 * then log_retention_days is set to 30 (read at the start of each cycle) and the next cycle deletes
 * the oldest day. The cycle is timed from the first slice committed (the table's lowest id moves,
 * polled on a reader connection) to its `log retention: N row(s)` line on the server's log; /run's
 * p99 in that window is compared with the idle window's. The file's size is read before and right
 * after the cycle, with the free pages SQLite keeps inside it.
 *
 * Full run: about 2 minutes (measured 105 s and 113 s; most of it writing the 10,000,000 rows,
 * 1.7 GB); --quick: 35 s.
 * Targets (issue 22): retention never stalls requests (p99 during it at most 2x idle); the file
 * shrinks to what is kept.
 */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { isoSeconds } from '../../src/common/clock.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { logMigrations } from '../../src/store/sqlite/migrations/log.js';
import { QUOTE_FLOW } from '../quote-flow.js';
import { load } from '../load.js';
import { makeSandbox, MiB, publishFlows, writeSettings, type PartSandbox } from './part-sandbox.js';
import { startTimedLoad } from './timed-load.js';
import type { ScaleContext, ScaleFigure, ScalePart, ScaleSection } from './types.js';

const DAY_MS = 86_400_000;
/** The retention the cycle applies; the rows span one day more. */
const RETENTION_DAYS = 30;
/** Rows per transaction while seeding, and rows per multi-row INSERT. */
const SEED_TX_ROWS = 100_000;
const SEED_CHUNK = 64;
const IDLE_WINDOW_MS = 5_000;
const RETENTION_TIMEOUT_MS = 180_000;
/** How often the table's lowest id is read while waiting for the cycle. Milliseconds. */
const POLL_MS = 10;
/** Row ids per DELETE of a retention cycle (src/housekeeping/log-retention.ts SLICE_ROWS). */
const SLICE_ROWS = 5000;

interface SizeFigures {
  readonly seedSec: number;
  readonly idleReqPerSec: number;
  readonly idleP99Ms: number;
  readonly retentionMs: number;
  readonly rowsDeleted: number;
  readonly retentionReqPerSec: number;
  readonly retentionP99Ms: number;
  readonly fileBeforeMiB: number;
  readonly fileAfterMiB: number;
  readonly freeAfterMiB: number;
}

/**
 * Writes `rows` event rows (a received and a completed row per request, event_only: no payload)
 * with timestamps from `spanDays` ago until now, oldest first, as the writer appends them. The
 * seeding connection alone turns journalling and syncs off: the file it leaves is the same.
 */
function seedRows(logDb: string, rows: number, spanDays: number): void {
  const db = openDb(logDb, logMigrations);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    const cols =
      '(ts, correlation_id, tenant, flow, step, event, payload, payload_truncated, http_status, outcome, reason, trace_id)';
    const one = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';
    const chunk = db.prepare(
      `INSERT INTO events ${cols} VALUES ${Array.from({ length: SEED_CHUNK }, () => one).join(', ')}`,
    );
    const single = db.prepare(`INSERT INTO events ${cols} VALUES ${one}`);
    const end = Date.now();
    const start = end - spanDays * DAY_MS;
    const step = (end - start) / rows;
    const row = (i: number): (string | number | null)[] => {
      const request = Math.floor(i / 2);
      const completed = i % 2 === 1;
      const hex = request.toString(16).padStart(12, '0');
      return [
        isoSeconds(start + i * step),
        `00000000-0000-4000-8000-${hex}`,
        'bench',
        'quote',
        null,
        completed ? 'completed' : 'received',
        null,
        0,
        completed ? 200 : null,
        null,
        null,
        `${hex}${hex}${hex.slice(0, 8)}`,
      ];
    };
    const tx = db.transaction((from: number, to: number) => {
      let i = from;
      for (; i + SEED_CHUNK <= to; i += SEED_CHUNK) {
        const values: (string | number | null)[] = [];
        for (let k = i; k < i + SEED_CHUNK; k++) values.push(...row(k));
        chunk.run(values);
      }
      for (; i < to; i++) single.run(row(i));
    });
    for (let from = 0; from < rows; from += SEED_TX_ROWS) tx(from, Math.min(rows, from + SEED_TX_ROWS));
  } finally {
    db.close();
  }
}

interface Server {
  readonly url: string;
  readonly pid: number;
  /** Resolves with the rows deleted when the server logs a retention cycle that deleted rows. */
  readonly retentionLogged: Promise<number>;
  stop(): Promise<void>;
}

/** `svc serve` with its operational log read (the retention line), stopped by PID. */
async function startServer(ctx: ScaleContext, box: PartSandbox): Promise<Server> {
  const env = { ...box.env, RUST_LOG: 'info', SVC_TEST_LOG_RETENTION_INTERVAL_MS: '1000' };
  const child = spawn(process.execPath, [ctx.svcBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', box.db], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    process.kill(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  let retentionResolve: (n: number) => void = () => undefined;
  const retentionLogged = new Promise<number>((r) => (retentionResolve = r));
  let errText = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    errText = (errText + d).slice(-65536);
    const m = /log retention: (\d+) row\(s\)/.exec(d);
    if (m) retentionResolve(Number(m[1]));
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`svc serve did not listen in 60 s: ${out} ${errText}`)), 60_000);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once('exit', (code) => reject(new Error(`svc serve exited with ${code}: ${errText}`)));
    });
    return { url, pid: child.pid!, retentionLogged, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function fileMiB(path: string): number {
  return statSync(path).size / MiB;
}

async function measureSize(ctx: ScaleContext, rows: number, index: number): Promise<SizeFigures> {
  const box = makeSandbox(ctx, `logs-${index}`);
  publishFlows(box.db, [QUOTE_FLOW]);
  // Past the oldest row: the start-up cycle and the shortened ones before the flip delete nothing.
  writeSettings(box.db, { log_retention_days: 2 * RETENTION_DAYS });
  const t0 = performance.now();
  seedRows(box.paths.logDb, rows, RETENTION_DAYS + 1);
  const seedSec = (performance.now() - t0) / 1000;
  ctx.progress(
    `logs: ${rows.toLocaleString('en-US')} rows written in ${seedSec.toFixed(1)} s (${fileMiB(box.paths.logDb).toFixed(0)} MiB); starting svc serve`,
  );

  const reader = openDb(box.paths.logDb, logMigrations, { readonly: true });
  const minId = reader.prepare<[], { id: number | null }>('SELECT min(id) AS id FROM events');
  const server = await startServer(ctx, box);
  const url = `${server.url}/flows/bench/quote/run`;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${box.key}` };
  const body = JSON.stringify({ id: 'o-1', total: 42 });
  try {
    await load('warm-up', { url, headers, body, durationSec: 2 });
    const run = startTimedLoad({ url, headers, body, maxSeconds: (IDLE_WINDOW_MS + RETENTION_TIMEOUT_MS) / 1000 + 30 });
    try {
      const idleFrom = performance.now();
      await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
      const idleTo = performance.now();
      const idle = run.window(idleFrom, idleTo);
      const firstId = minId.get()?.id ?? 0;
      const fileBeforeMiB = fileMiB(box.paths.logDb);
      writeSettings(box.db, { log_retention_days: RETENTION_DAYS });
      let startedAt = NaN;
      let endedAt = NaN;
      let rowsDeleted = -1;
      void server.retentionLogged.then((n) => {
        endedAt = performance.now();
        rowsDeleted = n;
      });
      const deadline = performance.now() + RETENTION_TIMEOUT_MS;
      while (Number.isNaN(endedAt)) {
        if (performance.now() > deadline) throw new Error(`logs: no retention cycle within ${RETENTION_TIMEOUT_MS} ms`);
        if (Number.isNaN(startedAt) && (minId.get()?.id ?? 0) !== firstId) startedAt = performance.now();
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      // The first slice ran before the lowest id moved: one slice's time (the mean of the others')
      // is put back in front. A cycle of one slice, or shorter than a poll, leaves no mean: then
      // the poll step stands for it.
      if (Number.isNaN(startedAt)) startedAt = endedAt - POLL_MS;
      const slices = Math.ceil(Math.max(1, rowsDeleted) / SLICE_ROWS);
      startedAt -= slices > 1 ? (endedAt - startedAt) / (slices - 1) : POLL_MS;
      const fileAfterMiB = fileMiB(box.paths.logDb);
      const pages = reader.pragma('freelist_count', { simple: true }) as number;
      const pageSize = reader.pragma('page_size', { simple: true }) as number;
      const during = run.window(startedAt, endedAt);
      if (run.non2xx > 0) throw new Error(`logs: /run answered non-2xx ${run.non2xx} times`);
      ctx.progress(
        `logs: ${rows.toLocaleString('en-US')} rows: retention deleted ${rowsDeleted} rows in ${(endedAt - startedAt).toFixed(0)} ms; p99 idle ${idle.p99Ms} ms, during ${during.p99Ms} ms`,
      );
      return {
        seedSec,
        idleReqPerSec: idle.reqPerSec,
        idleP99Ms: idle.p99Ms,
        retentionMs: endedAt - startedAt,
        rowsDeleted,
        retentionReqPerSec: during.reqPerSec,
        retentionP99Ms: during.p99Ms,
        fileBeforeMiB,
        fileAfterMiB,
        freeAfterMiB: (pages * pageSize) / MiB,
      };
    } finally {
      await run.stop();
    }
  } finally {
    await server.stop();
    reader.close();
  }
}

const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');

export const benchLogScale: ScalePart = async (ctx: ScaleContext): Promise<ScaleSection> => {
  const counts = ctx.quick ? [20_000, 100_000] : [1_000_000, 10_000_000];
  const measured: SizeFigures[] = [];
  for (const [i, rows] of counts.entries()) measured.push(await measureSize(ctx, rows, i));
  const col = (pick: (f: SizeFigures) => number) => measured.map(pick);
  const stallRatios = measured.map((f) => f.retentionP99Ms / f.idleP99Ms);
  // The /run load goes on writing rows through the cycle, so the file's size after it holds those
  // too: what shows that the deleted rows' pages went back to the disk is how few stay free inside.
  const deletedMiB = measured.map((f, i) => (f.fileBeforeMiB * f.rowsDeleted) / counts[i]!);
  const keptFreeShares = measured.map((f, i) => f.freeAfterMiB / deletedMiB[i]!);
  const figures: ScaleFigure[] = [
    {
      name: '/run with the event writer busy, idle window (req/s)',
      values: col((f) => f.idleReqPerSec),
      higherIsBetter: true,
    },
    { name: '/run p99, idle window (ms)', values: col((f) => f.idleP99Ms), higherIsBetter: false },
    { name: 'rows deleted by the retention cycle', values: col((f) => f.rowsDeleted), higherIsBetter: false },
    { name: 'retention cycle (ms)', values: col((f) => f.retentionMs), higherIsBetter: false },
    { name: '/run during the retention cycle (req/s)', values: col((f) => f.retentionReqPerSec), higherIsBetter: true },
    {
      name: '/run p99 during the retention cycle (ms)',
      values: col((f) => f.retentionP99Ms),
      higherIsBetter: false,
      target: `<= 2x the idle p99: ${stallRatios.map((r) => `${r.toFixed(2)}x`).join(' / ')}, ${verdict(stallRatios.every((r) => r <= 2))}`,
    },
    { name: 'log.db before retention (MiB)', values: col((f) => f.fileBeforeMiB), higherIsBetter: false },
    {
      name: 'log.db after retention, with the rows the load wrote meanwhile (MiB)',
      values: col((f) => f.fileAfterMiB),
      higherIsBetter: false,
    },
    {
      name: 'free pages kept inside log.db after retention (MiB)',
      values: col((f) => f.freeAfterMiB),
      higherIsBetter: false,
      target: `the deleted rows' pages given back to the disk (at most 10% of them kept free inside the file): ${keptFreeShares.map((s) => `${(100 * s).toFixed(0)}%`).join(' / ')} kept, ${verdict(keptFreeShares.every((s) => s <= 0.1))}`,
    },
  ];
  return {
    title: 'Event log',
    sizes: counts.map((n) => ({ label: `${n.toLocaleString('en-US')} rows`, count: n })),
    figures,
    notes: [
      `Rows written in-process into log.db's own schema, ${SEED_TX_ROWS.toLocaleString('en-US')} a transaction (seed: ${measured.map((f) => `${f.seedSec.toFixed(1)} s`).join(' / ')}), timestamps spread evenly over the last ${RETENTION_DAYS + 1} days; a received and a completed row per request, event_only (no payload).`,
      `/run load: 32 connections on the quote flow (validate + ntd, event_only: two rows per request for the event writer), one run across the idle window (${IDLE_WINDOW_MS / 1000} s) and the retention cycle. The retention interval was shortened to 1 s with the test-only SVC_TEST_LOG_RETENTION_INTERVAL_MS; log_retention_days went from ${2 * RETENTION_DAYS} to ${RETENTION_DAYS} through the settings table, as the UI writes it.`,
      'Cycle timed from its first committed slice (2,000 row ids a DELETE, then incremental vacuum slices, all on the event writer\'s thread; the lowest id of the table moves, polled every 10 ms), less one slice\'s mean time, to its log line. "During" counts every request in flight at some moment of that window (one a stall held past its end included).',
      "The log database keeps the rollback journal and full synchronous mode (spec), with auto_vacuum=INCREMENTAL: retention gives the deleted rows' pages back in slices (before it, they stayed inside the file as free pages).",
    ],
  };
};

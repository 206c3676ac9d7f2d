/**
 * Metrics part of `npm run bench`: /run with `--metrics` against /run without, on two servers that
 * differ only by that flag (same state directory, same flow, neither serving anything else).
 * Rounds go in ABBA order (off, on, on, off, ...), each followed by the same settle, so that the
 * drift of a shared two-core machine and the order of rounds fall on both alike; the figure is the
 * median of the per-pair ratios, which one disturbed round cannot move. Target: >= 0.97.
 */
import { load, spawnListening, type Child, type LoadResult } from './load.js';

export interface MetricsRatioOptions {
  /** dist/src/main.js */
  readonly svcBin: string;
  /** Environment with HOME of the bench sandbox. */
  readonly env: NodeJS.ProcessEnv;
  /** Registry database of the sandbox (flow bench/quote deployed). */
  readonly db: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Pairs of rounds (each pair one off and one on). @default 8 */
  readonly pairs?: number;
  /** Seconds of each round. @default 3 */
  readonly roundSec?: number;
  /** Pause after each round: its log writer backlog must not fall on the next. @default 2000 */
  readonly settleMs?: number;
}

export interface MetricsRatio {
  readonly off: readonly LoadResult[];
  readonly on: readonly LoadResult[];
  /** Median of on/off over the pairs. */
  readonly medianRatio: number;
}

export async function benchMetricsRatio(opts: MetricsRatioOptions): Promise<MetricsRatio> {
  const pairs = opts.pairs ?? 8;
  const roundSec = opts.roundSec ?? 3;
  const settleMs = opts.settleMs ?? 2000;
  const serve = [opts.svcBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', opts.db];
  const servers: Child[] = [];
  try {
    const off = await spawnListening(process.execPath, serve, opts.env);
    servers.push(off);
    const on = await spawnListening(process.execPath, [...serve, '--metrics'], opts.env);
    servers.push(on);
    const round = async (label: string, server: Child, sec: number): Promise<LoadResult> => {
      const r = await load(label, { url: `${server.url}/flows/bench/quote/run`, body: opts.body, headers: opts.headers, durationSec: sec });
      await new Promise((res) => setTimeout(res, settleMs));
      return r;
    };
    // Long enough for both to reach their steady speed (measured: a first round after 2 s still ran 20% slow).
    await round('warm-up', off, 4);
    await round('warm-up', on, 4);
    const offRounds: LoadResult[] = [];
    const onRounds: LoadResult[] = [];
    for (let pair = 0; pair < pairs; pair++) {
      // ABBA: even pairs measure off first, odd pairs on first.
      const order = pair % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
      for (const which of order) {
        if (which === 'off') offRounds.push(await round('svc /run, metrics off', off, roundSec));
        else onRounds.push(await round('svc /run, metrics on', on, roundSec));
      }
    }
    const ratios = onRounds.map((r, i) => r.reqPerSec / offRounds[i]!.reqPerSec).sort((a, b) => a - b);
    const mid = ratios.length >> 1;
    const medianRatio = ratios.length % 2 === 1 ? ratios[mid]! : (ratios[mid - 1]! + ratios[mid]!) / 2;
    return { off: offRounds, on: onRounds, medianRatio };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
  }
}

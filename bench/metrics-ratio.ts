/**
 * Metrics part of `npm run bench`: /run with `--metrics` against /run without, on two servers that
 * differ only by that flag (same state directory, same flow, neither serving anything else).
 * Rounds go in ABBA order (off, on, on, off, ...), each followed by the same settle, so that the
 * drift of a shared two-core machine and the order of rounds fall on both alike. Two processes of
 * the same build also differ from each other by a few percent for their whole life (measured: one
 * pair's median ratio 0.93, the next 1.06, the code unchanged), so the rounds are spread over
 * several fresh pairs of processes; the figure is the median of every per-pair ratio, which one
 * disturbed round or one lucky process cannot move. Target: >= 0.97.
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
  /** Pairs of fresh server processes, one after the other. @default 5 */
  readonly trials?: number;
  /** Pairs of rounds per trial (each pair one off and one on). @default 4 */
  readonly pairs?: number;
  /** Seconds of each round. @default 3 */
  readonly roundSec?: number;
  /** Pause after each round: its log writer backlog must not fall on the next. @default 2000 */
  readonly settleMs?: number;
}

export interface MetricsRatio {
  readonly off: readonly LoadResult[];
  readonly on: readonly LoadResult[];
  /** Median of on/off over every pair of rounds of every trial. */
  readonly medianRatio: number;
  /** Median of on/off within each trial (one pair of processes each). */
  readonly perTrial: readonly number[];
}

export async function benchMetricsRatio(opts: MetricsRatioOptions): Promise<MetricsRatio> {
  const trials = opts.trials ?? 5;
  const pairs = opts.pairs ?? 4;
  const off: LoadResult[] = [];
  const on: LoadResult[] = [];
  const perTrial: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const r = await oneTrial(opts, pairs);
    off.push(...r.off);
    on.push(...r.on);
    perTrial.push(median(r.on.map((x, i) => x.reqPerSec / r.off[i]!.reqPerSec)));
  }
  return { off, on, perTrial, medianRatio: median(on.map((r, i) => r.reqPerSec / off[i]!.reqPerSec)) };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** One pair of fresh server processes, `pairs` ABBA pairs of rounds. */
async function oneTrial(opts: MetricsRatioOptions, pairs: number): Promise<{ off: LoadResult[]; on: LoadResult[] }> {
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
      const r = await load(label, {
        url: `${server.url}/flows/bench/quote/run`,
        body: opts.body,
        headers: opts.headers,
        durationSec: sec,
      });
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
    return { off: offRounds, on: onRounds };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
  }
}

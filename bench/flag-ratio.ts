/**
 * The "on vs off" parts of `npm run bench`: /run of two servers that differ only by one switch of
 * `svc serve` (`--metrics`: what counting for Prometheus costs; `--no-rollups`: what the UI's
 * per-minute rollups cost), on the same state directory and flow, neither serving anything else.
 * Rounds go in ABBA order (off, on, on, off, ...), each followed by the same settle, so that the
 * drift of a shared two-core machine and the order of rounds fall on both alike. Two processes of
 * the same build also differ from each other by a few percent for their whole life (measured: one
 * pair's median ratio 0.93, the next 1.06, the code unchanged), so the rounds are spread over
 * several fresh pairs of processes; the figure is the median of every per-pair ratio, which one
 * disturbed round or one lucky process cannot move. Target of both: >= 0.97.
 */
import { load, spawnListening, type Child, type LoadResult } from './load.js';
import { median } from './scale/timed-server.js';

/** The feature measured: what `svc serve` is given to have it on, and to have it off. */
export interface Switch {
  /** Its name in the round labels ("metrics", "rollups"). */
  readonly name: string;
  readonly onArgs: readonly string[];
  readonly offArgs: readonly string[];
}

export const METRICS_SWITCH: Switch = { name: 'metrics', onArgs: ['--metrics'], offArgs: [] };
/** The rollups are on by default; `--no-rollups` is the server without them. */
export const ROLLUPS_SWITCH: Switch = { name: 'rollups', onArgs: [], offArgs: ['--no-rollups'] };

export interface FlagRatioOptions {
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

export interface FlagRatio {
  readonly off: readonly LoadResult[];
  readonly on: readonly LoadResult[];
  /** Median of on/off over every pair of rounds of every trial. */
  readonly medianRatio: number;
  /** Median of on/off within each trial (one pair of processes each). */
  readonly perTrial: readonly number[];
}

export async function benchFlagRatio(feature: Switch, opts: FlagRatioOptions): Promise<FlagRatio> {
  const trials = opts.trials ?? 5;
  const pairs = opts.pairs ?? 4;
  const off: LoadResult[] = [];
  const on: LoadResult[] = [];
  const perTrial: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const r = await oneTrial(feature, opts, pairs);
    off.push(...r.off);
    on.push(...r.on);
    perTrial.push(median(r.on.map((x, i) => x.reqPerSec / r.off[i]!.reqPerSec)));
  }
  return { off, on, perTrial, medianRatio: median(on.map((r, i) => r.reqPerSec / off[i]!.reqPerSec)) };
}

/** The line `npm run bench` prints for a FlagRatio. */
export function flagRatioLine(feature: Switch, ratio: FlagRatio): string {
  const pairRatios = ratio.on.map((r, i) => (r.reqPerSec / ratio.off[i]!.reqPerSec).toFixed(3)).join(' ');
  return `ratio /run ${feature.name} on vs ${feature.name} off: ${ratio.medianRatio.toFixed(3)} (median of ${ratio.on.length} ABBA pairs of rounds over ${ratio.perTrial.length} pairs of processes: ${pairRatios}; per pair of processes ${ratio.perTrial.map((r) => r.toFixed(3)).join(' ')}; target >= 0.97)\n`;
}

/** One pair of fresh server processes, `pairs` ABBA pairs of rounds. */
async function oneTrial(
  feature: Switch,
  opts: FlagRatioOptions,
  pairs: number,
): Promise<{ off: LoadResult[]; on: LoadResult[] }> {
  const roundSec = opts.roundSec ?? 3;
  const settleMs = opts.settleMs ?? 2000;
  const serve = [opts.svcBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', opts.db];
  const servers: Child[] = [];
  try {
    const off = await spawnListening(process.execPath, [...serve, ...feature.offArgs], opts.env);
    servers.push(off);
    const on = await spawnListening(process.execPath, [...serve, ...feature.onArgs], opts.env);
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
        if (which === 'off') offRounds.push(await round(`svc /run, ${feature.name} off`, off, roundSec));
        else onRounds.push(await round(`svc /run, ${feature.name} on`, on, roundSec));
      }
    }
    return { off: offRounds, on: onRounds };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
  }
}

/**
 * Throughput at several sizes, measured on servers running side by side in interleaved rounds, so
 * that load from elsewhere on a shared machine falls on every size alike; each size's figure is the
 * median of its rounds, which one disturbed round cannot move.
 */
import type { LoadResult } from '../load.js';
import { median, sleep } from './timed-server.js';

export interface RoundTarget {
  readonly label: string;
  /** One autocannon run of `sec` seconds against this target. */
  measure(sec: number): Promise<LoadResult>;
}

export interface RoundsOptions {
  readonly rounds: number;
  readonly roundSec: number;
  /** Before the rounds, per target. */
  readonly warmUpSec: number;
  /** Pause after every run, so a run's log-writer backlog does not fall on the next. */
  readonly settleMs: number;
}

export interface RoundsResult {
  /** Per target: median req/s, median p99 (ms), and every round. */
  readonly reqPerSec: number[];
  readonly p99Ms: number[];
  readonly rounds: LoadResult[][];
}

export async function interleavedRounds(targets: readonly RoundTarget[], opts: RoundsOptions, progress: (line: string) => void): Promise<RoundsResult> {
  for (const t of targets) {
    await t.measure(opts.warmUpSec);
    await sleep(opts.settleMs);
  }
  const rounds: LoadResult[][] = targets.map(() => []);
  for (let round = 0; round < opts.rounds; round++) {
    // The first target of each round rotates, so no size always follows the same one.
    for (let k = 0; k < targets.length; k++) {
      const i = (round + k) % targets.length;
      const r = await targets[i]!.measure(opts.roundSec);
      rounds[i]!.push(r);
      await sleep(opts.settleMs);
    }
    progress(`round ${round + 1}/${opts.rounds}: ${targets.map((t, i) => `${t.label} ${rounds[i]!.at(-1)!.reqPerSec.toFixed(0)} req/s`).join(', ')}`);
  }
  return {
    reqPerSec: rounds.map((rs) => median(rs.map((r) => r.reqPerSec))),
    p99Ms: rounds.map((rs) => median(rs.map((r) => r.p99Ms))),
    rounds,
  };
}

/** `1 flow`, `1,000 flows`. */
export function sizeLabel(count: number, singular: string, plural: string): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? singular : plural}`;
}

/**
 * A target checked at one size: `what` plus `met`/`missed` with the value there, or `not measured`
 * when the run did not reach that size (--quick).
 */
export function targetAt(counts: readonly number[], values: readonly number[], count: number, ok: (value: number) => boolean, shown: (value: number) => string): string {
  const i = counts.indexOf(count);
  if (i < 0 || !Number.isFinite(values[i]!)) return 'not measured in this run';
  return `${ok(values[i]!) ? 'met' : 'MISSED'} (${shown(values[i]!)})`;
}

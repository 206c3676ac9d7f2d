/**
 * Throughput at several sizes, measured on servers running side by side in interleaved rounds, so
 * that load from elsewhere on a shared machine falls on every size alike; each size's figure is the
 * median of its rounds, which one disturbed round cannot move. Server CPU time per request (every
 * thread, /proc/<pid>/stat, requests taken as req/s x seconds) is read around each round too: a
 * shared machine disturbs it far less than throughput.
 */
import { readFileSync } from 'node:fs';
import type { LoadResult } from '../load.js';
import { median, sleep } from './timed-server.js';

export interface RoundTarget {
  readonly label: string;
  /** One autocannon run of `sec` seconds against this target. */
  measure(sec: number): Promise<LoadResult>;
  /** The server's process: its CPU time per request is read around each round (Linux /proc). */
  readonly pid?: number;
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
  /** Per target: median req/s, median p99 (ms), median server CPU per request (us), and every round. */
  readonly reqPerSec: number[];
  /** NaN for a target without a pid. */
  readonly cpuUsPerRequest: number[];
  readonly p99Ms: number[];
  readonly rounds: LoadResult[][];
}

export async function interleavedRounds(targets: readonly RoundTarget[], opts: RoundsOptions, progress: (line: string) => void): Promise<RoundsResult> {
  for (const t of targets) {
    await t.measure(opts.warmUpSec);
    await sleep(opts.settleMs);
  }
  const rounds: LoadResult[][] = targets.map(() => []);
  const cpu: number[][] = targets.map(() => []);
  for (let round = 0; round < opts.rounds; round++) {
    // The first target of each round rotates, so no size always follows the same one.
    for (let k = 0; k < targets.length; k++) {
      const i = (round + k) % targets.length;
      const pid = targets[i]!.pid;
      const before = pid === undefined ? 0 : cpuMs(pid);
      const r = await targets[i]!.measure(opts.roundSec);
      rounds[i]!.push(r);
      // Read after the settle, so the log writer's work for the round's rows is counted too.
      await sleep(opts.settleMs);
      if (pid !== undefined) cpu[i]!.push(((cpuMs(pid) - before) * 1000) / Math.max(1, r.reqPerSec * opts.roundSec));
    }
    progress(`round ${round + 1}/${opts.rounds}: ${targets.map((t, i) => `${t.label} ${rounds[i]!.at(-1)!.reqPerSec.toFixed(0)} req/s`).join(', ')}`);
  }
  return {
    reqPerSec: rounds.map((rs) => median(rs.map((r) => r.reqPerSec))),
    p99Ms: rounds.map((rs) => median(rs.map((r) => r.p99Ms))),
    cpuUsPerRequest: cpu.map((c) => median(c)),
    rounds,
  };
}

/** USER_HZ 100: /proc/<pid>/stat counts CPU time in 10 ms ticks. */
const TICK_MS = 10;

/** CPU time (user + system, every thread) of a process so far, in ms (as bench/metrics-cpu.ts reads it). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
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

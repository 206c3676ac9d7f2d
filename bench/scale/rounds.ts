/**
 * Throughput at several sizes, measured on servers running side by side in interleaved rounds, so
 * that load from elsewhere on a shared machine falls on every size alike; each size's figure is the
 * median of its rounds, which one disturbed round cannot move. Server CPU time per request (every
 * thread, /proc/<pid>/stat, requests taken as req/s x seconds) is read around each round too: a
 * shared machine disturbs it far less than throughput.
 */
import { readdirSync, readFileSync } from 'node:fs';
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
  /** Per target, per round: server CPU per request (us); empty for a target without a pid. */
  readonly cpuRounds: number[][];
  /** Per target, per round: server CPU per request (us) by thread group (cpuByThread); empty for a target without a pid. */
  readonly threadRounds: Map<string, number>[][];
  /**
   * Per target: the median over every round of its req/s divided by that of the round's target
   * `ratioBase` (the first, unless told) in the same round; 1 for the base itself.
   */
  readonly ratioToBase: number[];
}

/** Fresh servers of every size for one generation of rounds; stop() also reads what is wanted after the load. */
export interface Generation {
  readonly targets: readonly RoundTarget[];
  stop(): Promise<void>;
}

export async function interleavedRounds(
  targets: readonly RoundTarget[],
  opts: RoundsOptions,
  progress: (line: string) => void,
): Promise<RoundsResult> {
  for (const t of targets) {
    await t.measure(opts.warmUpSec);
    await sleep(opts.settleMs);
  }
  const rounds: LoadResult[][] = targets.map(() => []);
  const cpu: number[][] = targets.map(() => []);
  const threads: Map<string, number>[][] = targets.map(() => []);
  for (let round = 0; round < opts.rounds; round++) {
    // The first target of each round rotates, so no size always follows the same one.
    for (let k = 0; k < targets.length; k++) {
      const i = (round + k) % targets.length;
      const pid = targets[i]!.pid;
      const before = pid === undefined ? 0 : cpuMs(pid);
      const beforeThreads = pid === undefined ? undefined : cpuByThread(pid);
      const r = await targets[i]!.measure(opts.roundSec);
      rounds[i]!.push(r);
      // Read after the settle, so the log writer's work for the round's rows is counted too.
      await sleep(opts.settleMs);
      if (pid !== undefined && beforeThreads !== undefined) {
        const requests = Math.max(1, r.reqPerSec * opts.roundSec);
        cpu[i]!.push(((cpuMs(pid) - before) * 1000) / requests);
        const perRequest = new Map<string, number>();
        for (const [group, us] of cpuByThread(pid))
          perRequest.set(group, (us - (beforeThreads.get(group) ?? 0)) / requests);
        threads[i]!.push(perRequest);
      }
    }
    progress(
      `round ${round + 1}/${opts.rounds}: ${targets.map((t, i) => `${t.label} ${rounds[i]!.at(-1)!.reqPerSec.toFixed(0)} req/s`).join(', ')}`,
    );
  }
  return summarise(rounds, cpu, threads, (i) => i);
}

/**
 * Rounds spread over `generations` sets of fresh server processes, started one set after the
 * other: two processes of the same build differ by a few percent for their whole life (issue 21:
 * one pair's median ratio 0.93, the next 1.06, the code unchanged), so one process per size would
 * put that difference into the comparison of sizes. Each generation takes `opts.rounds` interleaved
 * rounds after its warm-up; figures are medians over every round of every generation, and a
 * target's ratio to the base target is the median of its per-round ratios (within one round,
 * both ran minutes apart at most, on the same generation's processes). `ratioBaseOf(i)` names the
 * base target of target i (the first by default).
 */
export async function roundsOverGenerations(
  generations: number,
  start: (generation: number) => Promise<Generation>,
  opts: RoundsOptions,
  progress: (line: string) => void,
  ratioBaseOf: (target: number) => number = () => 0,
): Promise<RoundsResult> {
  let rounds: LoadResult[][] = [];
  let cpu: number[][] = [];
  let threads: Map<string, number>[][] = [];
  for (let g = 0; g < generations; g++) {
    const gen = await start(g);
    try {
      progress(`generation ${g + 1}/${generations}: fresh servers started`);
      const r = await interleavedRounds(gen.targets, opts, progress);
      rounds = r.rounds.map((rs, i) => [...(rounds[i] ?? []), ...rs]);
      cpu = r.cpuRounds.map((c, i) => [...(cpu[i] ?? []), ...c]);
      threads = r.threadRounds.map((t, i) => [...(threads[i] ?? []), ...t]);
    } finally {
      await gen.stop();
    }
  }
  return summarise(rounds, cpu, threads, ratioBaseOf);
}

function summarise(
  rounds: LoadResult[][],
  cpu: number[][],
  threads: Map<string, number>[][],
  ratioBaseOf: (target: number) => number,
): RoundsResult {
  return {
    reqPerSec: rounds.map((rs) => median(rs.map((r) => r.reqPerSec))),
    p99Ms: rounds.map((rs) => median(rs.map((r) => r.p99Ms))),
    cpuUsPerRequest: cpu.map((c) => median(c)),
    rounds,
    cpuRounds: cpu,
    threadRounds: threads,
    ratioToBase: rounds.map((rs, i) => median(rs.map((r, k) => r.reqPerSec / rounds[ratioBaseOf(i)]![k]!.reqPerSec))),
  };
}

/** USER_HZ 100: /proc/<pid>/stat counts CPU time in 10 ms ticks. */
export const TICK_MS = 10;

/**
 * User + system time of a `/proc/.../stat` line, in ms. The fields are read after the last `) `:
 * the command name before it may itself hold spaces and parentheses.
 */
export function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** CPU time (user + system, every thread) of a process so far, in ms (as bench/metrics-cpu.ts reads it). */
export function cpuMs(pid: number): number {
  return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/**
 * CPU time so far (us) of a process by thread group, from /proc/<pid>/task/<tid>/stat: the main
 * thread, worker threads in start order (`worker 1`, ...), V8's helpers, and other threads by name
 * (libuv's pool). Their sum is the process's CPU time but for threads that have ended.
 */
export function cpuByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  const tids = readdirSync(`/proc/${pid}/task`)
    .map(Number)
    .sort((a, b) => a - b);
  let workers = 0;
  for (const tid of tids) {
    let stat: string;
    let comm: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const us = statCpuMs(stat) * 1000;
    const group =
      tid === pid
        ? 'main'
        : comm === 'WorkerThread'
          ? `worker ${++workers}`
          : comm.startsWith('V8')
            ? 'V8 helpers'
            : comm;
    out.set(group, (out.get(group) ?? 0) + us);
  }
  return out;
}

/** `1 flow`, `1,000 flows`. */
export function sizeLabel(count: number, singular: string, plural: string): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? singular : plural}`;
}

/**
 * A target checked at one size: `what` plus `met`/`missed` with the value there, or `not measured`
 * when the run did not reach that size (--quick).
 */
export function targetAt(
  counts: readonly number[],
  values: readonly number[],
  count: number,
  ok: (value: number) => boolean,
  shown: (value: number) => string,
): string {
  const i = counts.indexOf(count);
  if (i < 0 || !Number.isFinite(values[i]!)) return 'not measured in this run';
  return `${ok(values[i]!) ? 'met' : 'MISSED'} (${shown(values[i]!)})`;
}

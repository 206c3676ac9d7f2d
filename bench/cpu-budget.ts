/**
 * What a target rate leaves of this machine's CPU for the server, for `npm run bench:peers`: at R
 * requests a second, C cores give C / R seconds of CPU a request in all, of which the load generator
 * (wrk, on the same machine) and the kernel's interrupt work for the loopback traffic take their
 * share whatever the server is. What is left is the most any server, over all its threads, may
 * spend on a request at that rate; its main thread (one core) at most 1 / R. Measured, not assumed:
 * each figure below is read from /proc around a run of the same load generator.
 */
import { readFileSync } from 'node:fs';
import { cpuByThread, TICK_MS } from './scale/rounds.js';

/** CPU a request of one measured run, in microseconds. */
export interface CpuPerRequest {
  readonly reqPerSec: number;
  /** All of the server's threads. */
  readonly server: number;
  /** The server's main thread (its event loop): one core at most. */
  readonly mainThread: number;
  /** The load generator (wrk) in user and system time. */
  readonly loadGenerator: number;
  /** The kernel's hard and soft interrupt time on every core (the loopback traffic's delivery). */
  readonly kernel: number;
}

/** The first line of /proc/stat (all cores): irq plus softirq ticks, in seconds. */
export function interruptSeconds(procStat: string): number {
  const cpu = procStat.slice(0, procStat.indexOf('\n')).split(/\s+/);
  if (cpu[0] !== 'cpu') throw new Error('not /proc/stat');
  // cpu user nice system idle iowait irq softirq ...
  return ((Number(cpu[6]) + Number(cpu[7])) * TICK_MS) / 1000;
}

/**
 * bash's arguments to run `cmd` under `timeout limitSeconds` and then print, last, the CPU seconds
 * it used (`times`: the shell's own line, then its children's), read back by `childrenSeconds`.
 */
export function timedArgs(limitSeconds: number, cmd: string, args: readonly string[]): string[] {
  return ['-c', 'timeout "$@"; times', 'timed', String(limitSeconds), cmd, ...args];
}

/**
 * The children's user and system seconds from bash's `times` (its second line, `1m2.500s 0m0.750s`),
 * printed last on a command's output; undefined when absent.
 */
export function childrenSeconds(output: string): number | undefined {
  const lines = output.trimEnd().split('\n');
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(lines.at(-1) ?? '');
  if (m === null || !/^\d+m[\d.]+s \d+m[\d.]+s$/.test(lines.at(-2) ?? '')) return undefined;
  return Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]);
}

/** Readings before a run, to be closed by `cpuPerRequest` after it. */
export interface CpuMark {
  /** The server's CPU so far by thread group, in microseconds (scale/rounds.ts's cpuByThread: `main` is its main thread). */
  readonly threads: Map<string, number>;
  readonly interrupts: number;
}

export function cpuMark(pid: number): CpuMark {
  return { threads: cpuByThread(pid), interrupts: interruptSeconds(readFileSync('/proc/stat', 'utf8')) };
}

/** The run's CPU a request, from its mark, the server's pid, the requests answered and wrk's seconds. */
export function cpuPerRequest(
  pid: number,
  before: CpuMark,
  requests: number,
  reqPerSec: number,
  loadGeneratorSeconds: number,
): CpuPerRequest {
  const after = cpuMark(pid);
  let server = 0;
  for (const [group, us] of after.threads) server += us - (before.threads.get(group) ?? 0);
  const mainThread = (after.threads.get('main') ?? 0) - (before.threads.get('main') ?? 0);
  const perRequest = (seconds: number) => (seconds * 1e6) / requests;
  return {
    reqPerSec,
    server: server / requests,
    mainThread: mainThread / requests,
    loadGenerator: perRequest(loadGeneratorSeconds),
    kernel: perRequest(after.interrupts - before.interrupts),
  };
}

const f1 = (x: number) => x.toFixed(1);

/** One measured run as a line: its rate and where its CPU a request went. */
export function cpuLine(label: string, c: CpuPerRequest): string {
  return `  ${label.padEnd(18)} ${c.reqPerSec.toFixed(0).padStart(7)} req/s: server ${f1(c.server)} (main thread ${f1(c.mainThread)}), wrk ${f1(c.loadGenerator)}, kernel interrupts ${f1(c.kernel)}\n`;
}

/**
 * Whether `ours` fits the machine's CPU at `rate`: the budget a request in all (cores / rate), what
 * the load generator and the kernel took of it in ours' own run, what that leaves for the server
 * and for its main thread, and ours' use of each.
 */
export function budgetLine(
  what: string,
  rate: number | undefined,
  cores: number,
  ours: CpuPerRequest | undefined,
): string {
  if (rate === undefined || !(rate > 0) || ours === undefined) return `${what}: not measured in this run\n`;
  const all = (cores * 1e6) / rate;
  const others = ours.loadGenerator + ours.kernel;
  const left = all - others;
  const mainLimit = 1e6 / rate;
  const fits = ours.server <= left && ours.mainThread <= mainLimit;
  const verdict = fits ? 'within the machine' : "past this machine's CPU";
  return (
    `${what} (${rate.toFixed(0)} req/s) on ${cores} cores: ${f1(all)} us of CPU a request in all; wrk and the kernel ` +
    `take ${f1(others)}, leaving ${f1(left)} for the server (its main thread ${f1(mainLimit)}); ours used ` +
    `${f1(ours.server)} (main thread ${f1(ours.mainThread)}): ${verdict}\n`
  );
}

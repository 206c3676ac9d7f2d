/**
 * `npm run bench:processes`: `svc serve` as one process against `svc serve --processes 2` (two
 * full processes on one port, SO_REUSEPORT), both side by side on the same state directory's copy,
 * measured in alternating rounds of /run (the bench flow of `npm run bench`): req/s, p99, and the
 * servers' CPU per request (every process of the server, the group's own included, read from
 * /proc), which is what says how far more cores would carry it.
 *
 * On a 2-core machine the load generator (autocannon, in this process) takes a core of its own, so
 * req/s cannot show two processes' worth; the CPU per request can, and the projection to 16 cores
 * is made from it: (16 cores, less what a load generator would take) / CPU per request.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedBenchState } from './bench-state.js';
import { load, spawnListening, type Child, type LoadResult } from './load.js';
import { cpuMs } from './scale/rounds.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = 3;

/** The server's process and, for a group, its members (the group's children, read from /proc). */
function serverPids(child: Child): number[] {
  const pid = child.process.pid!;
  let kids: number[] = [];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // no children: a single process
  }
  return [pid, ...kids];
}

interface Round extends LoadResult {
  readonly cpuUsPerRequest: number;
}

async function round(
  label: string,
  server: Child,
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<Round> {
  const pids = serverPids(server);
  const before = pids.reduce((a, p) => a + cpuMs(p), 0);
  const r = await load(label, { url, body, headers, durationSec: DURATION });
  const used = pids.reduce((a, p) => a + cpuMs(p), 0) - before;
  return { ...r, cpuUsPerRequest: (used * 1000) / Math.max(1, r.reqPerSec * DURATION) };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-processes-'));
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const children: Child[] = [];
  try {
    const key = seedBenchState(SVC, env, db);
    const body = JSON.stringify({ id: 'o-1', total: 42 });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const one = await spawnListening(
      process.execPath,
      [SVC, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db],
      env,
    );
    children.push(one);
    const two = await spawnListening(
      process.execPath,
      [SVC, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--processes', '2'],
      env,
    );
    children.push(two);
    // The group's first boot line is out when its first member listens: give the second its time.
    await new Promise((r) => setTimeout(r, 3000));
    const urlOf = (c: Child) => `${c.url}/flows/bench/quote/run`;
    await load('warm-up', { url: urlOf(one), body, headers, durationSec: 2 });
    await load('warm-up', { url: urlOf(two), body, headers, durationSec: 2 });
    const ones: Round[] = [];
    const twos: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      ones.push(await round('/run, 1 process', one, urlOf(one), body, headers));
      twos.push(await round('/run, --processes 2', two, urlOf(two), body, headers));
    }
    const cores = 16;
    for (const [label, rs] of [
      ['1 process', ones],
      ['--processes 2', twos],
    ] as const) {
      const rps = median(rs.map((r) => r.reqPerSec));
      const cpu = median(rs.map((r) => r.cpuUsPerRequest));
      const failures = rs.reduce((a, r) => a + r.non2xx + r.errors, 0);
      process.stdout.write(
        `${label.padEnd(14)} ${rps.toFixed(0).padStart(7)} req/s  p99 ${median(rs.map((r) => r.p99Ms)).toFixed(1)} ms  CPU ${cpu.toFixed(0)} us/request  non-2xx+errors ${failures}\n`,
      );
      process.stdout.write(
        `${''.padEnd(14)} rounds (req/s): ${rs.map((r) => r.reqPerSec.toFixed(0)).join(', ')}; CPU per request (us): ${rs.map((r) => r.cpuUsPerRequest.toFixed(0)).join(', ')}\n`,
      );
      if (label === '--processes 2')
        process.stdout.write(
          `${''.padEnd(14)} on ${cores} cores, ${cores - 2} left for the server: about ${((((cores - 2) * 1e6) / cpu) | 0).toLocaleString('en-US')} req/s (${cores - 2} processes at this CPU per request, if nothing else is shared)\n`,
        );
    }
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    rmSync(home, { recursive: true, force: true });
  }
}

await main();

/**
 * `npm run bench:metrics-cpu`: what counting costs, as server CPU time per /run request rather than
 * throughput (which a shared two-core machine makes noisy): two `svc serve` on one state directory,
 * one with `--metrics`, take the same fixed number of requests in alternating rounds, and the CPU
 * time of each process (every thread: the log writer included, from /proc/<pid>/stat) is divided by
 * the requests. The first round warms up and is not counted. Linux only; loopback only.
 *
 *   npm run bench:metrics-cpu -- [--requests 30000] [--rounds 5]
 */
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnListening } from './load.js';
import { QUOTE_FLOW } from './quote-flow.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');
const TICK_MS = 10; // USER_HZ 100: /proc/<pid>/stat counts CPU time in 10 ms ticks


function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  const v = at > 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${name} takes a positive integer`);
  return v;
}

/** CPU time (user + system, every thread) of a process so far. Milliseconds. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

async function main(): Promise<void> {
  const requests = flag('--requests', 30_000);
  const rounds = flag('--rounds', 5);
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-metrics-'));
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const svc = (args: string[]) => execFileSync(process.execPath, [SVC, ...args], { env, encoding: 'utf8' });
  const servers: { stop(): Promise<void> }[] = [];
  try {
    svc(['tenant', 'create', '--id', 'bench', '--display-name', 'Bench', '--db', db]);
    const key = /svk_[0-9a-f]{32}/.exec(svc(['keys', 'create', '--tenant', 'bench', '--label', 'bench', '--db', db]))?.[0];
    if (!key) throw new Error('no key made');
    writeFileSync(join(home, 'quote.flow.md'), QUOTE_FLOW);
    svc(['deploy', join(home, 'quote.flow.md'), '-v', '1.0.0', '--db', db]);
    const serve = ['serve', '--host', '127.0.0.1', '--port', '0', '--db', db];
    const off = await spawnListening(process.execPath, [SVC, ...serve], env);
    servers.push(off);
    const on = await spawnListening(process.execPath, [SVC, ...serve, '--metrics'], env);
    servers.push(on);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const body = JSON.stringify({ id: 'o-1', total: 42 });
    const total = { off: 0, on: 0 };
    for (let round = 0; round < rounds; round++) {
      for (const [label, s] of [['off', off], ['on', on]] as const) {
        const before = cpuMs(s.process.pid!);
        await autocannon({ url: `${s.url}/flows/bench/quote/run`, method: 'POST', headers, body, connections: 16, amount: requests });
        // The log writer thread finishes the round's rows before the CPU time is read.
        await new Promise((r) => setTimeout(r, 1500));
        const used = cpuMs(s.process.pid!) - before;
        if (round > 0) total[label] += used;
        process.stdout.write(`round ${round}${round === 0 ? ' (warm-up)' : ''}  metrics ${label.padEnd(3)}  ${((used * 1000) / requests).toFixed(1)} us CPU per request\n`);
      }
    }
    const per = (ms: number) => (ms * 1000) / ((rounds - 1) * requests);
    process.stdout.write(`metrics off ${per(total.off).toFixed(1)} us, on ${per(total.on).toFixed(1)} us CPU per request: on/off ${(total.on / total.off).toFixed(3)} (target <= 1.03)\n`);
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});

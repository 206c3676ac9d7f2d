/**
 * `npm run bench:metrics-instructions`: what counting costs, as machine instructions per /run
 * request counted by valgrind's callgrind, which a shared two-core machine cannot disturb (req/s and
 * CPU time per request both vary by 5-8% from round to round and from process to process there).
 * For each of metrics off and on, in turn: `svc serve` under callgrind with instrumentation off,
 * a warm-up of --warmup requests, instrumentation on, --requests requests, a dump, and the dump's
 * instruction totals divided by the requests: the main thread's (where the request path and its
 * counting run) and every thread's (the log writer, whose batching varies with timing, and V8's
 * GC and compiler threads).
 * --trials alternates off and on that many times each, each a fresh process; the figure is the
 * ratio of the medians. Linux with valgrind
 * installed; loopback only. A trial takes about a minute and a half at the defaults.
 *
 *   npm run bench:metrics-instructions -- [--requests 2000] [--warmup 3000] [--trials 3]
 */
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnListening } from './load.js';
import { QUOTE_FLOW } from './quote-flow.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  const v = at > 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${name} takes a positive integer`);
  return v;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const requests = flag('--requests', 2000);
  const warmup = flag('--warmup', 3000);
  const trials = flag('--trials', 3);
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed (apt-get install -y valgrind)');
  }
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-instr-'));
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const svc = (args: string[]) => execFileSync(process.execPath, [SVC, ...args], { env, encoding: 'utf8' });
  try {
    svc(['tenant', 'create', '--id', 'bench', '--display-name', 'Bench', '--db', db]);
    const key = /svk_[0-9a-f]{32}/.exec(
      svc(['keys', 'create', '--tenant', 'bench', '--label', 'bench', '--db', db]),
    )?.[0];
    if (!key) throw new Error('no key made');
    writeFileSync(join(home, 'quote.flow.md'), QUOTE_FLOW);
    svc(['deploy', join(home, 'quote.flow.md'), '-v', '1.0.0', '--db', db]);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const body = JSON.stringify({ id: 'o-1', total: 42 });
    const perRequest = { off: [] as number[], on: [] as number[] };
    const perRequestAll = { off: [] as number[], on: [] as number[] };
    for (let trial = 0; trial < trials; trial++) {
      for (const label of ['off', 'on'] as const) {
        const out = join(home, `callgrind-${label}-${trial}.out`);
        const server = await spawnListening(
          'valgrind',
          [
            '--tool=callgrind',
            '--instr-atstart=no',
            '--separate-threads=yes',
            `--callgrind-out-file=${out}`,
            process.execPath,
            SVC,
            'serve',
            '--host',
            '127.0.0.1',
            '--port',
            '0',
            '--db',
            db,
            ...(label === 'on' ? ['--metrics'] : []),
          ],
          env,
          { timeoutMs: 240_000, stderr: 'ignore' },
        );
        try {
          const url = `${server.url}/flows/bench/quote/run`;
          const fire = async (amount: number) => {
            const r = await autocannon({ url, method: 'POST', headers, body, connections: 8, amount });
            if (r.non2xx > 0 || r.errors > 0)
              throw new Error(`metrics ${label}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
          };
          await fire(warmup);
          await sleep(2000);
          execFileSync('callgrind_control', ['-i', 'on', String(server.process.pid)], { stdio: 'ignore' });
          await fire(requests);
          // The log writer thread finishes the requests' rows inside the counted window.
          await sleep(2000);
          execFileSync('callgrind_control', ['-d', String(server.process.pid)], { stdio: 'ignore' });
          execFileSync('callgrind_control', ['-i', 'off', String(server.process.pid)], { stdio: 'ignore' });
        } finally {
          await server.stop();
        }
        // The dump asked for is `<out>.1-<thread>` (one file per thread); the files written at exit are not counted.
        const dumps = readdirSync(home)
          .filter((f) => f.startsWith(`${basename(out)}.1-`))
          .sort();
        const totalOf = (file: string) =>
          Number(/^totals:\s+(\d+)/m.exec(readFileSync(join(home, file), 'utf8'))?.[1] ?? NaN);
        const mainThread = totalOf(dumps[0]!) / requests;
        const all = dumps.reduce((a, f) => a + totalOf(f), 0) / requests;
        if (!Number.isFinite(all)) throw new Error(`no totals in ${dumps.join(', ')}`);
        perRequest[label].push(mainThread);
        perRequestAll[label].push(all);
        process.stdout.write(
          `trial ${trial}  metrics ${label.padEnd(3)}  ${Math.round(mainThread).toLocaleString('en-US')} instructions per request on the main thread, ${Math.round(all).toLocaleString('en-US')} on all ${dumps.length} threads\n`,
        );
      }
    }
    // The median: a trial that met a major GC or a recompilation in its window (seen: +20%) cannot move it.
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      const mid = s.length >> 1;
      return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
    };
    const off = median(perRequest.off);
    const on = median(perRequest.on);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    process.stdout.write(
      `main thread (where counting runs): metrics off ${fmt(off)}, on ${fmt(on)} instructions per request: on/off ${(on / off).toFixed(4)} (target <= 1.03)\n`,
    );
    const offAll = median(perRequestAll.off);
    const onAll = median(perRequestAll.on);
    process.stdout.write(
      `all threads (log writer, GC and compiler threads too): off ${fmt(offAll)}, on ${fmt(onAll)}: on/off ${(onAll / offAll).toFixed(4)}\n`,
    );
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});

// The CPU budget lines of bench:peers: /proc and bash `times` read right, and a target rate's
// budget said within or past the machine from the figures given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  budgetLine,
  childrenSeconds,
  cpuMark,
  cpuPerRequest,
  interruptSeconds,
  timedArgs,
  type CpuPerRequest,
} from './cpu-budget.js';
import { cpuByThread, statCpuMs, TICK_MS } from './scale/rounds.js';

/** Spins this thread until it has used `ms` of CPU by its own count. */
function burn(ms: number): void {
  const start = process.threadCpuUsage();
  let x = 0;
  while (true) {
    for (let i = 0; i < 100_000; i++) x += Math.sqrt(i);
    const used = process.threadCpuUsage(start);
    if ((used.user + used.system) / 1000 >= ms) break;
  }
  if (x < 0) throw new Error('unreachable');
}

test('statCpuMs (scale/rounds.ts, which the budget reads through): user plus system, counted after the name however it is spelled', () => {
  const after = 'S 1 1 1 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 9 0 100 1000 50';
  assert.equal(statCpuMs(`4321 (node) ${after}`), 325 * TICK_MS);
  assert.equal(statCpuMs(`4321 (a (b) c) d) ${after}`), 325 * TICK_MS);
});

test("cpuByThread: this process's main thread, its time grown by what it spent", () => {
  const before = cpuByThread(process.pid);
  assert.ok(before.has('main'), 'the main thread is its own group');
  burn(300);
  const grown = (cpuByThread(process.pid).get('main')! - before.get('main')!) / 1e6;
  // Ticks of 10 ms: 0.3 s spent reads at least 0.25 s.
  assert.ok(grown >= 0.25 && grown < 5, `main thread grew by ${grown} s`);
});

test('interruptSeconds: irq plus softirq of the all-cores line; anything else refused', () => {
  assert.equal(interruptSeconds('cpu  100 0 50 900 10 30 70 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n'), 1);
  assert.throws(() => interruptSeconds('intr 1 2 3\n'), /not \/proc\/stat/);
  assert.ok(interruptSeconds(readFileSync('/proc/stat', 'utf8')) >= 0);
});

test("childrenSeconds: the last line of bash's times; undefined without one", () => {
  assert.equal(childrenSeconds('LOADRESULT rps=1\n0m0.010s 0m0.002s\n1m2.500s 0m0.750s\n'), 63.25);
  assert.equal(childrenSeconds('LOADRESULT rps=1\n'), undefined);
  assert.equal(childrenSeconds('0m1.000s 0m0.500s\n'), undefined);
  assert.equal(childrenSeconds(''), undefined);
});

test('timedArgs: bash runs the command under timeout and prints its CPU seconds last', () => {
  const spin =
    "const s = process.cpuUsage(); while (true) { const u = process.cpuUsage(s); if (u.user + u.system > 300000) break; } console.log('done');";
  const out = spawnSync('bash', timedArgs(30, process.execPath, ['-e', spin]), { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /^done\n/);
  const seconds = childrenSeconds(out.stdout);
  assert.ok(seconds !== undefined && seconds >= 0.25 && seconds < 10, `children used ${seconds} s`);
});

test("cpuPerRequest: the server's threads and the load generator's seconds over the requests, in microseconds", () => {
  const mark = cpuMark(process.pid);
  burn(200);
  const c = cpuPerRequest(process.pid, mark, 1000, 5000, 0.5);
  assert.equal(c.reqPerSec, 5000);
  assert.equal(c.loadGenerator, 500);
  assert.ok(c.mainThread >= 150 && c.mainThread <= c.server, `main ${c.mainThread}, all ${c.server}`);
  assert.ok(c.kernel >= 0);
});

test('budgetLine: within the machine, past it by all threads or by the main thread alone, or not measured', () => {
  const ours = (server: number, mainThread: number): CpuPerRequest => ({
    reqPerSec: 50_000,
    server,
    mainThread,
    loadGenerator: 4.5,
    kernel: 3,
  });
  // 100,000 req/s on 2 cores: 20 us a request in all, 12.5 left after wrk and the kernel, 10 for the main thread.
  const within = budgetLine('/run at 6 x Node-RED', 100_000, 2, ours(12, 9));
  assert.match(within, /^\/run at 6 x Node-RED \(100000 req\/s\) on 2 cores: 20\.0 us of CPU a request in all;/);
  assert.match(
    within,
    /take 7\.5, leaving 12\.5 for the server \(its main thread 10\.0\); ours used 12\.0 \(main thread 9\.0\): within the machine\n$/,
  );
  assert.match(budgetLine('x', 100_000, 2, ours(23, 9)), /past this machine's CPU\n$/);
  assert.match(budgetLine('x', 100_000, 2, ours(12, 15)), /past this machine's CPU\n$/);
  assert.equal(budgetLine('x', undefined, 2, ours(1, 1)), 'x: not measured in this run\n');
  assert.equal(budgetLine('x', 100_000, 2, undefined), 'x: not measured in this run\n');
  assert.equal(budgetLine('x', 0, 2, ours(1, 1)), 'x: not measured in this run\n');
});

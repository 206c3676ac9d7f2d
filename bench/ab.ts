/**
 * `npm run bench:ab -- <root> <root> ...`: /run of several builds of the service against a bare
 * node:http server, all side by side, in alternating rounds (the first of each round rotates), so
 * that a comparison of two commits is made in one sitting and load from elsewhere falls on all
 * alike. Each root is a checkout with its own `dist/` (built) and `node_modules`; a commit is
 * prepared as `git worktree add --detach /tmp/wt-X <rev>`, a symlink to this checkout's
 * node_modules, and `npm run build` there.
 *
 * Prints per build: the median req/s, the median of its per-round ratios to the bare server's,
 * the median p99, and the CPU per request by thread (main thread, each worker thread, V8's helpers,
 * libuv's pool; /proc/<pid>/task/<tid>/stat around each round plus its settle), which moves less
 * with the machine's other load than req/s, and each build's median ratio to the first build's in
the same rounds. Every generation starts fresh processes of every target (--generations, 3) and
measures them in --rounds (4) rounds of --seconds (5) each, with --settle-ms (1500) after each.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { seedBenchState } from './bench-state.js';
import { BARE_SERVER_SOURCE, load, spawnListening, type Child, type LoadResult } from './load.js';

const { values: flags, positionals: roots } = parseArgs({
  allowPositionals: true,
  options: {
    generations: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '5' },
    'settle-ms': { type: 'string', default: '1500' },
  },
});
const GENERATIONS = Number(flags.generations);
const ROUNDS = Number(flags.rounds);
const SECONDS = Number(flags.seconds);
const SETTLE_MS = Number(flags['settle-ms']);
const TICK_US = 10_000;

/** CPU time so far (us) per thread group of a process: the main thread, worker threads in start order, V8's and libuv's helpers. */
function cpuByThread(pid: number): Map<string, number> {
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
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    const us = (Number(fields[11]) + Number(fields[12])) * TICK_US;
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

/** A build under test (or the bare server): its state is seeded once, its process started afresh each generation. */
interface Target {
  readonly label: string;
  /** Starts this target's server: its child process and the URL of /run. */
  readonly start: () => Promise<{ child: Child; url: string }>;
  readonly headers: Record<string, string>;
  readonly measured: boolean;
  readonly results: LoadResult[];
  readonly cpu: Map<string, number>[];
}

const headersFor = (key: string): Record<string, string> => ({
  'content-type': 'application/json',
  authorization: `Bearer ${key}`,
});

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function buildTarget(root: string, index: number, homes: string[]): Target {
  const svc = join(resolve(root), 'dist/src/main.js');
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-ab-'));
  homes.push(home);
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const key = seedBenchState(svc, env, db);
  return {
    label: `${index + 1}: ${basename(resolve(root))}`,
    start: async () => {
      const child = await spawnListening(
        process.execPath,
        [svc, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db],
        env,
      );
      return { child, url: `${child.url}/flows/bench/quote/run` };
    },
    headers: headersFor(key),
    measured: true,
    results: [],
    cpu: [],
  };
}

async function main(): Promise<void> {
  if (roots.length === 0) throw new Error('usage: npm run bench:ab -- <root with dist/> [<root> ...]');
  const homes: string[] = [];
  const body = JSON.stringify({ id: 'o-1', total: 42 });
  const targets: Target[] = [
    {
      label: 'bare node:http',
      start: async () => {
        const child = await spawnListening(process.execPath, ['-e', BARE_SERVER_SOURCE]);
        return { child, url: child.url };
      },
      headers: headersFor('none'),
      measured: false,
      results: [],
      cpu: [],
    },
    ...roots.map((root, i) => buildTarget(root, i, homes)),
  ];
  let running: Child[] = [];
  try {
    for (let g = 0; g < GENERATIONS; g++) {
      // Fresh processes each generation: two processes of one build differ by several percent
      // for their whole life, which one generation would put into the comparison of builds.
      const live = [];
      for (const t of targets) {
        const started = await t.start();
        running.push(started.child);
        live.push({ t, ...started });
      }
      for (const { t, url } of live) {
        await load('warm-up', { url, body, headers: t.headers, durationSec: 2 });
        await sleep(SETTLE_MS);
      }
      for (let round = 0; round < ROUNDS; round++) {
        // The first of each round rotates, so no build always follows the same one.
        for (let k = 0; k < live.length; k++) {
          const { t, url, child } = live[(round + k) % live.length]!;
          const pid = child.process.pid!;
          const before = t.measured ? cpuByThread(pid) : undefined;
          t.results.push(await load(t.label, { url, body, headers: t.headers, durationSec: SECONDS }));
          await sleep(SETTLE_MS);
          if (before !== undefined) {
            const after = cpuByThread(pid);
            const requests = Math.max(1, t.results.at(-1)!.reqPerSec * SECONDS);
            const perRequest = new Map<string, number>();
            for (const [group, us] of after) perRequest.set(group, (us - (before.get(group) ?? 0)) / requests);
            t.cpu.push(perRequest);
          }
        }
        process.stdout.write(
          `generation ${g + 1}/${GENERATIONS} round ${round + 1}/${ROUNDS}: ${targets.map((t) => `${t.label} ${t.results.at(-1)!.reqPerSec.toFixed(0)}`).join(', ')} req/s\n`,
        );
      }
      for (const c of running) await c.stop().catch(() => undefined);
      running = [];
    }
    const bareRounds = targets[0]!.results;
    const firstBuild = targets[1]!.results;
    for (const t of targets) {
      const toBare = t.results.map((r, k) => r.reqPerSec / bareRounds[k]!.reqPerSec);
      const toFirst = t.results.map((r, k) => r.reqPerSec / firstBuild[k]!.reqPerSec);
      const failures = t.results.reduce((a, r) => a + r.non2xx + r.errors, 0);
      process.stdout.write(
        `${t.label.padEnd(28)} ${median(t.results.map((r) => r.reqPerSec))
          .toFixed(0)
          .padStart(7)} req/s  ratio to bare ${median(toBare).toFixed(3)}` +
          (t.measured ? `  to build 1 ${median(toFirst).toFixed(3)}` : '') +
          `  p99 ${median(t.results.map((r) => r.p99Ms)).toFixed(1)} ms  non-2xx+errors ${failures}\n`,
      );
      if (t.cpu.length === 0) continue;
      const groups = [...new Set(t.cpu.flatMap((m) => [...m.keys()]))];
      const all = median(t.cpu.map((m) => [...m.values()].reduce((a, b) => a + b, 0)));
      process.stdout.write(
        `${''.padEnd(28)} CPU us/request: all ${all.toFixed(1)}; ${groups.map((g) => `${g} ${median(t.cpu.map((m) => m.get(g) ?? 0)).toFixed(1)}`).join(', ')}\n`,
      );
    }
  } finally {
    for (const c of running) await c.stop().catch(() => undefined);
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  }
}

await main();

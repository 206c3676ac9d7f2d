/**
 * `npm run bench:ab -- <root> <root> ...`: /run of several builds of the service against a bare
 * node:http server, all side by side, in alternating rounds (the first of each round rotates), so
 * that a comparison of two commits is made in one sitting and load from elsewhere falls on all
 * alike. Each root is a checkout with its own `dist/` (built) and `node_modules`; a commit is
 * prepared as `git worktree add --detach /tmp/wt-X <rev>`, a symlink to this checkout's
 * node_modules, and `npm run build` there. A root may carry `svc serve` switches after commas:
 * `. .,--no-rollups` compares one build with and without its rollups.
 *
 * Prints per build: the median req/s, the median of its per-round ratios to the bare server's,
 * the median p99, and the CPU per request by thread (main thread, each worker thread, V8's helpers,
 * libuv's pool; /proc/<pid>/task/<tid>/stat around each round plus its settle), which moves less
 * with the machine's other load than req/s, and each build's median ratio to the first build's in
 * the same rounds. The rounds are scale/rounds.ts's roundsOverGenerations: every generation starts
 * fresh processes of every target (--generations, 3) and measures them in --rounds (4) rounds of
 * --seconds (5) each, with --settle-ms (1500) after each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { seedBenchState } from './bench-state.js';
import { BARE_SERVER_SOURCE, load, spawnListening, type Child } from './load.js';
import { roundsOverGenerations, type Generation } from './scale/rounds.js';
import { median } from './scale/timed-server.js';

const { values: flags, positionals: roots } = parseArgs({
  allowPositionals: true,
  options: {
    generations: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '5' },
    'settle-ms': { type: 'string', default: '1500' },
  },
});

const BODY = JSON.stringify({ id: 'o-1', total: 42 });

/** A server under test: its state is seeded once, its process started afresh each generation. */
interface Subject {
  readonly label: string;
  readonly headers: Record<string, string>;
  /** Starts its server: the child process and the URL of /run. */
  start(): Promise<{ child: Child; url: string }>;
}

const headersFor = (key: string): Record<string, string> => ({
  'content-type': 'application/json',
  authorization: `Bearer ${key}`,
});

function buildSubject(spec: string, index: number, homes: string[]): Subject {
  const [root = '.', ...serveArgs] = spec.split(',');
  const svc = join(resolve(root), 'dist/src/main.js');
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-ab-'));
  homes.push(home);
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const key = seedBenchState(svc, env, db);
  return {
    label: `${index + 1}: ${[basename(resolve(root)), ...serveArgs].join(' ')}`,
    headers: headersFor(key),
    start: async () => {
      const child = await spawnListening(
        process.execPath,
        [svc, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...serveArgs],
        env,
      );
      return { child, url: `${child.url}/flows/bench/quote/run` };
    },
  };
}

const BARE: Subject = {
  label: 'bare node:http',
  headers: headersFor('none'),
  start: async () => {
    const child = await spawnListening(process.execPath, ['-e', BARE_SERVER_SOURCE]);
    return { child, url: child.url };
  },
};

/** Fresh processes of every subject, measured by roundsOverGenerations (the bare server's CPU is not read). */
async function generation(subjects: readonly Subject[]): Promise<Generation> {
  const started: { child: Child; url: string }[] = [];
  try {
    for (const s of subjects) started.push(await s.start());
  } catch (err) {
    for (const s of started) await s.child.stop().catch(() => undefined);
    throw err;
  }
  return {
    targets: subjects.map((s, i) => ({
      label: s.label,
      measure: (sec: number) =>
        load(s.label, { url: started[i]!.url, body: BODY, headers: s.headers, durationSec: sec }),
      pid: i === 0 ? undefined : started[i]!.child.process.pid!,
    })),
    stop: async () => {
      for (const s of started) await s.child.stop().catch(() => undefined);
    },
  };
}

async function main(): Promise<void> {
  if (roots.length === 0) throw new Error('usage: npm run bench:ab -- <root with dist/> [<root> ...]');
  const homes: string[] = [];
  try {
    const subjects = [BARE, ...roots.map((root, i) => buildSubject(root, i, homes))];
    const r = await roundsOverGenerations(
      Number(flags.generations),
      () => generation(subjects),
      {
        rounds: Number(flags.rounds),
        roundSec: Number(flags.seconds),
        warmUpSec: 2,
        settleMs: Number(flags['settle-ms']),
      },
      (line) => process.stdout.write(`${line}\n`),
    );
    const firstBuild = r.rounds[1]!;
    subjects.forEach((s, i) => {
      const rounds = r.rounds[i]!;
      const toFirst = median(rounds.map((x, k) => x.reqPerSec / firstBuild[k]!.reqPerSec));
      const failures = rounds.reduce((a, x) => a + x.non2xx + x.errors, 0);
      process.stdout.write(
        `${s.label.padEnd(28)} ${r.reqPerSec[i]!.toFixed(0).padStart(7)} req/s  ratio to bare ${r.ratioToBase[i]!.toFixed(3)}` +
          (i > 0 ? `  to build 1 ${toFirst.toFixed(3)}` : '') +
          `  p99 ${r.p99Ms[i]!.toFixed(1)} ms  non-2xx+errors ${failures}\n`,
      );
      const threads = r.threadRounds[i]!;
      if (threads.length === 0) return;
      const groups = [...new Set(threads.flatMap((m) => [...m.keys()]))];
      process.stdout.write(
        `${''.padEnd(28)} CPU us/request: all ${r.cpuUsPerRequest[i]!.toFixed(1)}; ${groups.map((g) => `${g} ${median(threads.map((m) => m.get(g) ?? 0)).toFixed(1)}`).join(', ')}\n`,
      );
    });
  } finally {
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  }
}

await main();

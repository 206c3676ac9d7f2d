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
 *
 * `--path enqueue` measures durable /enqueue instead (enqueue.ts's one-step sink flow, autocannon
 * with --connections, 50 by default as in the peers' BullMQ comparison) with the queue's worker held
 * back, its consumer lock taken by this process as another node's would be: the like-for-like of
 * BullMQ's `Queue.add`, which runs no worker.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { statePaths } from '../src/common/paths.js';
import { LockFile } from '../src/queue/coordination/lock-file.js';
import { consumerLockOptions, queuePaths } from '../src/queue/file/queue-paths.js';
import { deployFlow, seedBenchState } from './bench-state.js';
import { SINK } from './enqueue.js';
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
    path: { type: 'string', default: 'run' },
    connections: { type: 'string' },
  },
});

if (flags.path !== 'run' && flags.path !== 'enqueue') throw new Error(`--path is run or enqueue, not ${flags.path}`);
const ENQUEUE = flags.path === 'enqueue';
const CONNECTIONS = Number(flags.connections ?? (ENQUEUE ? 50 : 32));

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

/** Consumer locks this process holds for the whole run (--path enqueue): released at the end. */
const heldLocks: LockFile[] = [];

async function buildSubject(spec: string, index: number, homes: string[]): Promise<Subject> {
  const [root = '.', ...serveArgs] = spec.split(',');
  const svc = join(resolve(root), 'dist/src/main.js');
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-ab-'));
  homes.push(home);
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const key = seedBenchState(svc, env, db);
  if (ENQUEUE) {
    deployFlow(svc, env, db, 'sink.flow.md', SINK);
    const held = queuePaths(statePaths(db).queuesDir, 'bench', 'sink');
    mkdirSync(held.dir, { recursive: true });
    const lock = await LockFile.tryAcquire(held.consumerLock, consumerLockOptions(held));
    if (lock === undefined) throw new Error(`the sink queue of ${home} is locked by someone else`);
    heldLocks.push(lock);
  }
  const path = ENQUEUE ? '/flows/bench/sink/enqueue' : '/flows/bench/quote/run';
  return {
    label: `${index + 1}: ${[basename(resolve(root)), ...serveArgs].join(' ')}`,
    headers: headersFor(key),
    start: async () => {
      const child = await spawnListening(
        process.execPath,
        [svc, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...serveArgs],
        env,
      );
      return { child, url: `${child.url}${path}` };
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
        load(s.label, {
          url: started[i]!.url,
          body: BODY,
          headers: s.headers,
          durationSec: sec,
          connections: CONNECTIONS,
        }),
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
    const subjects = [BARE];
    for (const [i, root] of roots.entries()) subjects.push(await buildSubject(root, i, homes));
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
    for (const lock of heldLocks) await lock.release();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  }
}

await main();

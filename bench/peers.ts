/**
 * `npm run bench:peers`: the service beside its peers in one run, and issue 40's targets met or
 * missed (docs/performance.md, "Targets").
 *
 * The peers' harness is `../shared/bench-peers` beside the checkout (SVC_PEERS_DIR elsewhere),
 * copied to a working folder (SVC_PEERS_WORK, default <tmp>/svc-bench-peers) and set up there once
 * (its setup.sh: wrk, redis-server and PostgreSQL from Debian when missing, its pinned npm peers).
 * Then, one after the other:
 * 1. its `http.sh` with our /run as one more row (`servers/ours-setup.sh`: the bench flow, two
 *    validate rules and an ntd answer, key auth, event log at event_only), ROUNDS rounds
 *    interleaved with bare node:http, Fastify and Node-RED, wrk with 50 connections; and a ceiling
 *    row (socket-ceiling.ts: the contract off `node:net` sockets, no HTTP parser, nothing else),
 *    against which it says whether six times Node-RED is within reach of a server like ours here;
 * 2. its `queue.sh`: the disk's fdatasync rates, BullMQ `Queue.add` and drain on Redis with AOF
 *    `always`, pg-boss `send`;
 * 3. our worker's drain of a 20,000-message backlog (BullMQ's prefill), then our durable /enqueue
 *    with the same wrk and 50 connections, ROUNDS runs each with the queue's worker running (as in
 *    service) and held back (its consumer lock taken by the bench: as BullMQ's Queue.add, no
 *    worker), alternating.
 * Besides, the CPU a request of the bare server, the ceiling and our /run (each alone under the same
 * wrk, between 1 and 2) and of our /enqueue with its worker running (its last run), and what the
 * machine's cores leave a server at six times Node-RED and at half the bare server (cpu-budget.ts).
 * PostgreSQL /enqueue against pg-boss is `npm run bench -- --store <url>` (bench/pg.ts): it needs
 * our server on the store, which that part already runs beside pg-boss.
 *
 * Flags: --rounds (3), --seconds (10) of each measured run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { statePaths } from '../src/common/paths.js';
import { LockFile } from '../src/queue/coordination/lock-file.js';
import { consumerLockOptions, queuePaths } from '../src/queue/file/queue-paths.js';
import { svcCli } from './bench-state.js';
import { prefillQueue, timeDrain, waitDrained } from './enqueue.js';
import { BARE_SERVER_SOURCE, spawnListening } from './load.js';
import { median } from './scale/timed-server.js';
import {
  budgetLine,
  childrenSeconds,
  cpuLine,
  cpuMark,
  cpuPerRequest,
  timedArgs,
  type CpuPerRequest,
} from './cpu-budget.js';
import { SOCKET_CEILING_SOURCE } from './socket-ceiling.js';
import { ratioOf, reachLine, targetLines, type Target } from './targets.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SVC = join(ROOT, 'dist/src/main.js');
const { values: flags } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '10' } },
});
const ROUNDS = Number(flags.rounds);
const SECONDS = Number(flags.seconds);
const DRAIN_BACKLOG = 20_000;
const RUN_PORT = 18090;
const ENQUEUE_PORT = 18091;
const CEILING_PORT = 18092;
/** This Node first on PATH: the harness's scripts run `node`, and our build's native parts are this Node's. */
const PATH_ENV = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };

function onPath(tool: string): boolean {
  return spawnSync('bash', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

/** Runs a command with its output shown; throws on a non-zero exit. */
async function shown(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<void> {
  const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${code}`);
}

/** The peers' harness, copied out of the read-only share and set up once. */
async function preparePeers(): Promise<string> {
  const src = process.env.SVC_PEERS_DIR ?? join(ROOT, '..', 'shared', 'bench-peers');
  const work = process.env.SVC_PEERS_WORK ?? join(tmpdir(), 'svc-bench-peers');
  if (existsSync(join(work, 'node_modules'))) return work;
  if (!existsSync(join(src, 'http.sh'))) throw new Error(`no peers' harness at ${src} (set SVC_PEERS_DIR)`);
  cpSync(src, work, { recursive: true });
  const skipApt = onPath('wrk') && onPath('redis-server') ? '1' : '0';
  await shown('bash', [join(work, 'setup.sh')], { ...PATH_ENV, SKIP_APT: skipApt });
  return work;
}

/** Rows of a TSV the harness wrote, as records by column name. */
function readTsv(path: string): Record<string, string>[] {
  const [head, ...lines] = readFileSync(path, 'utf8').trim().split('\n');
  const cols = head!.split('\t');
  return lines.map((l) => Object.fromEntries(l.split('\t').map((v, i) => [cols[i], v])));
}

function newest(dir: string, prefix: string): string {
  const files = readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.tsv'))
    .sort();
  if (files.length === 0) throw new Error(`no ${prefix}*.tsv in ${dir}`);
  return join(dir, files.at(-1)!);
}

/** The shared median, undefined for no figures (a row the harness could not measure). */
const medianOf = (xs: readonly number[]): number | undefined => {
  const m = median(xs);
  return Number.isFinite(m) ? m : undefined;
};

interface HttpRow {
  readonly reqPerSec: number | undefined;
  readonly p99Ms: number | undefined;
}

function httpRow(rows: readonly Record<string, string>[], name: string): HttpRow {
  const mine = rows.filter((r) => r.name === name && Number(r.req_s) > 0);
  return {
    reqPerSec: medianOf(mine.map((r) => Number(r.req_s))),
    p99Ms: medianOf(mine.map((r) => Number(r.p99_ms))),
  };
}

/** ops/s of the first queue row whose name starts with `prefix` (letter case aside: the harness writes `aof always`). */
function queueRate(rows: readonly Record<string, string>[], prefix: string): number | undefined {
  const row = rows.find((r) => r.name?.toLowerCase().startsWith(prefix.toLowerCase()));
  return row === undefined ? undefined : Number(row.ops_s);
}

/** The `export A=...; export B=...` line of servers/ours-setup.sh, as a record. */
function oursSetup(work: string): Record<string, string> {
  const out = spawnSync('bash', [join(work, 'servers', 'ours-setup.sh'), ROOT], {
    encoding: 'utf8',
    env: PATH_ENV,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (out.status !== 0) throw new Error(`ours-setup.sh exited with ${out.status}`);
  return Object.fromEntries([...out.stdout.matchAll(/export (\w+)=([^;\s]+)/g)].map((m) => [m[1]!, m[2]!]));
}

/** One wrk run of `seconds` against `url` with the harness's POST script; its LOADRESULT line's figures. */
interface WrkResult {
  readonly rps: number;
  readonly p99: number;
  readonly failed: number;
  readonly requests: number;
  /** wrk's own user and system seconds (bash's `times` after it); undefined when not printed. */
  readonly loadSeconds: number | undefined;
}

/**
 * Runs wrk as a child without blocking this process: the held queue's consumer lock taken here
 * keeps its heartbeat. Under a blocking spawnSync its lease (30 s) ran out during the second held
 * run, the server's worker took the held queue over, and the later held runs measured submissions
 * beside deliveries of the held backlog (session 30: 26.9k against 31.2k req/s in the first run).
 */
async function wrk(work: string, url: string, seconds: number, key: string): Promise<WrkResult> {
  // Through bash, whose `times` then prints wrk's CPU seconds (the budget lines of cpu-budget.ts).
  const child = spawn(
    'bash',
    timedArgs(seconds + 30, 'wrk', [
      '-t1',
      '-c50',
      `-d${seconds}s`,
      '--timeout',
      '10s',
      '-s',
      join(work, 'lib', 'post.lua'),
      url,
    ]),
    {
      env: { ...process.env, BODY_FILE: join(work, 'lib', 'body.json'), AUTH_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve());
  });
  const line = /LOADRESULT (.*)/.exec(stdout)?.[1];
  if (line === undefined) throw new Error(`wrk gave no result: ${stdout} ${stderr}`);
  const field = (k: string) => Number(new RegExp(`${k}=([\\d.]+)`).exec(line)?.[1] ?? NaN);
  return {
    rps: field('rps'),
    p99: field('p99_ms'),
    failed: field('errors') + field('non2xx'),
    requests: field('requests'),
    loadSeconds: childrenSeconds(stdout),
  };
}

async function main(): Promise<void> {
  if (!onPath('wrk') && process.env.SVC_PEERS_WORK === undefined)
    process.stderr.write("wrk is not installed: the harness's setup.sh installs it from Debian's packages\n");
  const work = await preparePeers();
  const out = mkdtempSync(join(tmpdir(), 'svc-bench-peers-out-'));
  const ours = oursSetup(work);
  const home = ours.OURS_HOME!;
  const key = ours.AUTH_KEY!;
  const env = { ...PATH_ENV, PEERS_OUT_DIR: out, AUTH_KEY: key };
  try {
    // 1. HTTP: the peers, our /run and the ceiling of the runtime, interleaved by the harness.
    const serve = `HOME='${home}' exec '${process.execPath}' '${SVC}' serve --host 127.0.0.1 --port ${RUN_PORT}`;
    const ceilingFile = join(out, 'socket-ceiling.cjs');
    writeFileSync(ceilingFile, SOCKET_CEILING_SOURCE);
    await shown(
      'bash',
      [
        join(work, 'http.sh'),
        '--row',
        `ours|http://127.0.0.1:${RUN_PORT}/flows/acme/ack/run|${serve}`,
        '--row',
        `ceiling|http://127.0.0.1:${CEILING_PORT}/run|exec '${process.execPath}' '${ceilingFile}'`,
      ],
      { ...env, ROUNDS: String(ROUNDS), DURATION: String(SECONDS) },
    );
    const http = readTsv(newest(out, 'http-'));
    const bare = httpRow(http, 'node-http');
    const fastify = httpRow(http, 'fastify');
    const nodeRed = httpRow(http, 'node-red');
    const run = httpRow(http, 'ours');
    const ceiling = httpRow(http, 'ceiling');
    const svcEnv = { ...process.env, HOME: home, RUST_LOG: 'warn' };
    // Where a request's CPU goes: the bare server (load.ts's, as `npm run bench` runs it), the
    // ceiling and our /run, each alone under the same wrk, before the queue parts (whose held
    // backlog a server started later would deliver while measured).
    const cpuOf = async (
      args: string[],
      childEnv: NodeJS.ProcessEnv,
      path: string,
    ): Promise<CpuPerRequest | undefined> => {
      const child = await spawnListening(process.execPath, args, childEnv);
      try {
        await wrk(work, `${child.url}${path}`, 2, key);
        const mark = cpuMark(child.process.pid!);
        const r = await wrk(work, `${child.url}${path}`, Math.min(SECONDS, 8), key);
        return r.loadSeconds === undefined
          ? undefined
          : cpuPerRequest(child.process.pid!, mark, r.requests, r.rps, r.loadSeconds);
      } finally {
        await child.stop();
      }
    };
    const bareCpu = await cpuOf(['-e', BARE_SERVER_SOURCE], process.env, '/run');
    const ceilingCpu = await cpuOf([ceilingFile], { ...process.env, PORT: String(CEILING_PORT) }, '/run');
    const runCpu = await cpuOf(
      [SVC, 'serve', '--host', '127.0.0.1', '--port', String(RUN_PORT)],
      svcEnv,
      '/flows/acme/ack/run',
    );

    // 2. The queue peers.
    await shown('bash', [join(work, 'queue.sh'), '--only', 'disk,bullmq,pgboss'], env);
    const queue = readTsv(newest(out, 'queue-'));
    const bullAdd = queueRate(queue, 'bullmq Queue.add (AOF always');
    const bullDrain = queueRate(queue, 'bullmq Worker drain (AOF always');
    const bossSend = queueRate(queue, 'pg-boss send');
    const oneFsync = queueRate(queue, 'disk append+fdatasync');

    // 3. Our drain of BullMQ's backlog size, then our /enqueue under the same load generator.
    const source = readFileSync(join(home, 'ack.flow.md'), 'utf8');
    for (const copy of ['drain', 'held']) {
      writeFileSync(join(home, `${copy}.flow.md`), source.replace('flow: ack', `flow: ${copy}`));
      svcCli(SVC, svcEnv, ['deploy', join(home, `${copy}.flow.md`), '-v', '1']);
    }
    const { queuesDir } = statePaths(join(home, '.svc', 'registry.db'));
    const body = readFileSync(join(work, 'lib', 'body.json'), 'utf8');
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const serveArgs = [SVC, 'serve', '--host', '127.0.0.1', '--port', String(ENQUEUE_PORT)];
    // The drain first, on empty queues besides its own: no other backlog shares the worker's CPU.
    const payload = JSON.parse(body) as Record<string, unknown>;
    await prefillQueue(queuesDir, 'acme', 'drain', DRAIN_BACKLOG, (i) => ({ ...payload, id: `evt-${i}` }));
    const server = await spawnListening(process.execPath, serveArgs, svcEnv);
    const enqueueRuns: WrkResult[] = [];
    const heldRuns: WrkResult[] = [];
    // BullMQ's Queue.add runs no worker: the like-for-like is /enqueue to a queue whose worker is
    // held back (its consumer lock taken here, as another node's would be). Both are measured, in
    // alternating runs: the worker running is the service's own condition.
    const heldPaths = queuePaths(queuesDir, 'acme', 'held');
    mkdirSync(heldPaths.dir, { recursive: true });
    const heldLock = await LockFile.tryAcquire(heldPaths.consumerLock, consumerLockOptions(heldPaths));
    if (heldLock === undefined) throw new Error('the held queue is locked by someone else');
    let drain: number;
    let enqueueCpu: CpuPerRequest | undefined;
    try {
      drain = await timeDrain({
        serverUrl: server.url,
        queuesDir,
        tenant: 'acme',
        flow: 'drain',
        backlog: DRAIN_BACKLOG,
        headers,
        body,
      });
      process.stdout.write(`ours drain of ${DRAIN_BACKLOG} messages: ${drain.toFixed(0)} messages/s\n`);
      const url = `${server.url}/flows/acme/ack/enqueue`;
      const heldUrl = `${server.url}/flows/acme/held/enqueue`;
      await wrk(work, url, 3, key);
      await waitDrained(queuesDir, 'acme', 'ack', 120_000);
      await wrk(work, heldUrl, 3, key);
      for (let i = 0; i < ROUNDS; i++) {
        for (const [runs, target, label] of [
          [enqueueRuns, url, 'worker running'],
          [heldRuns, heldUrl, 'worker held'],
        ] as const) {
          // The last running run's CPU a request, its backlog's deliveries included (read once drained).
          const mark = target === url && i === ROUNDS - 1 ? cpuMark(server.process.pid!) : undefined;
          runs.push(await wrk(work, target, SECONDS, key));
          // A held run is like Queue.add only while no worker delivers the held queue's messages.
          if (target === heldUrl && !(await heldLock.stillHeld()))
            throw new Error(
              "the held queue's consumer lock was lost during a held run: its figure is not like Queue.add",
            );
          // The running worker's backlog is worked off before the next run: the held runs (no
          // worker, like Queue.add) must not share the machine with it.
          if (target === url) await waitDrained(queuesDir, 'acme', 'ack', 120_000);
          const r = runs.at(-1)!;
          if (mark !== undefined && r.loadSeconds !== undefined)
            enqueueCpu = cpuPerRequest(server.process.pid!, mark, r.requests, r.rps, r.loadSeconds);
          process.stdout.write(
            `ours /enqueue (${label}) run ${i + 1}/${ROUNDS}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms, failed ${r.failed}\n`,
          );
        }
      }
    } finally {
      await server.stop();
      await heldLock.release();
    }
    const enqueue = medianOf(enqueueRuns.map((r) => r.rps));
    const enqueueP99 = medianOf(enqueueRuns.map((r) => r.p99));
    const held = medianOf(heldRuns.map((r) => r.rps));
    const heldP99 = medianOf(heldRuns.map((r) => r.p99));
    const fmt = (x: number | undefined, digits = 0) => (x === undefined ? '-' : x.toFixed(digits));

    process.stdout.write('\nIn this run (medians; req/s or messages/s):\n');
    const figures: [string, string][] = [
      ['bare node:http POST', `${fmt(bare.reqPerSec)} (p99 ${fmt(bare.p99Ms, 2)} ms)`],
      ['Fastify', `${fmt(fastify.reqPerSec)} (p99 ${fmt(fastify.p99Ms, 2)} ms)`],
      ['Node-RED', `${fmt(nodeRed.reqPerSec)} (p99 ${fmt(nodeRed.p99Ms, 2)} ms)`],
      ['ours /run', `${fmt(run.reqPerSec)} (p99 ${fmt(run.p99Ms, 2)} ms)`],
      ['node:net ceiling (no HTTP parser)', `${fmt(ceiling.reqPerSec)} (p99 ${fmt(ceiling.p99Ms, 2)} ms)`],
      ['disk, one fdatasync per append', fmt(oneFsync)],
      ['BullMQ Queue.add, AOF always', fmt(bullAdd)],
      ['ours /enqueue (durable, worker running)', `${fmt(enqueue)} (p99 ${fmt(enqueueP99, 2)} ms)`],
      ['ours /enqueue (durable, worker held)', `${fmt(held)} (p99 ${fmt(heldP99, 2)} ms)`],
      ['BullMQ drain, AOF always', fmt(bullDrain)],
      [`ours drain (${DRAIN_BACKLOG.toLocaleString('en-US')} backlog)`, fmt(drain)],
      ['pg-boss send', fmt(bossSend)],
    ];
    for (const [what, value] of figures) process.stdout.write(`  ${what.padEnd(42)} ${value}\n`);
    const targets: Target[] = [
      {
        what: '/enqueue (worker held, like Queue.add) / BullMQ Queue.add (AOF always)',
        value: ratioOf(held, bullAdd),
        target: 1,
        direction: 'at least',
        unit: 'x',
      },
      {
        what: '/enqueue (worker running) / BullMQ Queue.add (AOF always)',
        value: ratioOf(enqueue, bullAdd),
        target: 1,
        direction: 'at least',
        unit: 'x',
      },
      {
        what: '/enqueue / bare node:http',
        value: ratioOf(enqueue, bare.reqPerSec),
        target: 0.5,
        direction: 'at least',
      },
      {
        what: '/run / bare node:http',
        value: ratioOf(run.reqPerSec, bare.reqPerSec),
        target: 0.8,
        direction: 'at least',
      },
      {
        what: '/run p99 / bare p99',
        value: ratioOf(run.p99Ms, bare.p99Ms),
        target: 2,
        direction: 'at most',
        unit: 'x',
      },
      {
        what: '/run / Node-RED',
        value: ratioOf(run.reqPerSec, nodeRed.reqPerSec),
        target: 6,
        direction: 'at least',
        unit: 'x',
      },
      {
        what: 'drain / BullMQ drain (AOF always)',
        value: ratioOf(drain, bullDrain),
        target: 2,
        direction: 'at least',
        unit: 'x',
      },
      { what: 'PostgreSQL /enqueue / pg-boss send', value: undefined, target: 4, direction: 'at least', unit: 'x' },
    ];
    process.stdout.write(`\nTargets (issue 40):\n${targetLines(targets)}`);
    process.stdout.write(
      '(PostgreSQL /enqueue against pg-boss send: npm run bench -- --store postgres://..., its own part)\n',
    );
    // What a server doing nothing but the contract answered in the same rounds: a target rate past
    // it is out of reach of a one-process server here, whatever its code.
    process.stdout.write(
      `\n${reachLine('/run at 6 x Node-RED', nodeRed.reqPerSec === undefined ? undefined : 6 * nodeRed.reqPerSec, ceiling.reqPerSec)}`,
    );
    const ofCeiling = ratioOf(run.reqPerSec, ceiling.reqPerSec);
    if (ofCeiling !== undefined) process.stdout.write(`ours /run: ${ofCeiling.toFixed(2)} of the node:net ceiling\n`);
    // The machine's CPU at the target rates, against what ours used a request (cpu-budget.ts).
    process.stdout.write('\nCPU a request, microseconds (each measured alone under the same wrk):\n');
    for (const [label, cpu] of [
      ['bare node:http', bareCpu],
      ['node:net ceiling', ceilingCpu],
      ['ours /run', runCpu],
      ['ours /enqueue', enqueueCpu],
    ] as const)
      process.stdout.write(cpu === undefined ? `  ${label}: not measured\n` : cpuLine(label, cpu));
    const cores = availableParallelism();
    const sixNodeRed = nodeRed.reqPerSec === undefined ? undefined : 6 * nodeRed.reqPerSec;
    process.stdout.write(budgetLine('/run at 6 x Node-RED', sixNodeRed, cores, runCpu));
    const halfBare = bare.reqPerSec === undefined ? undefined : 0.5 * bare.reqPerSec;
    process.stdout.write(budgetLine('/enqueue at 0.5 x bare', halfBare, cores, enqueueCpu));
    if ([...enqueueRuns, ...heldRuns].some((r) => r.failed > 0))
      process.stdout.write('WARNING: /enqueue had failed requests\n');
  } finally {
    rmSync(out, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  }
}

await main();

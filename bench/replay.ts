/**
 * `svc replay` at size (issue 38): 10,000 deliveries recorded with payload tracing on by a real
 * `svc serve` (a validate rule, one http_egress call out to a loopback backend in this process,
 * an ntd answer), then one `svc replay --json` process replaying them all against the same file,
 * wall time including its start (median of `rounds`, by default three). Reported, never asserted; a run whose counts
 * are not every delivery the same, or whose backend got a request during a replay, is reported as
 * broken instead of as a figure. The recording is set-up; its time is printed beside.
 * Part of `npm run bench`; alone: `npm run bench:replay [-- --deliveries N --rounds N]`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { deployFlow, svcCli } from './bench-state.js';
import { spawnListening, type Child } from './load.js';
import { pricedQuoteFlow } from './quote-flow.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');
const TENANT = 'bench';
const FLOW = 'replay-quote';
/** Requests in flight at once while recording. */
const IN_FLIGHT = 32;

const flowText = (backend: string) =>
  pricedQuoteFlow(
    FLOW,
    backend,
    '{"id": "{{ ctx.input.id }}", "total": {{ ctx.input.unit * 2 }}, "status": "accepted"}',
  );

export interface ReplayBench {
  readonly deliveries: number;
  readonly recordMs: number;
  /** Requests /run did not answer 201 while recording (a broken set-up when > 0). */
  readonly recordFailures: number;
  readonly roundsMs: readonly number[];
  readonly medianMs: number;
  /** The JSON counts line of each round. */
  readonly counts: readonly ReplayCounts[];
  /** Requests the loopback backend got during the replays (all rounds). */
  readonly backendCallsDuringReplay: number;
}

interface ReplayCounts {
  deliveries: number;
  same: number;
  differs: number;
  not_replayable: number;
}

/** Counts every request; answers the price of an id (`/price/q-00042` costs 42.5). */
async function startBackend(): Promise<{ server: Server; url: string; calls: () => number }> {
  let calls = 0;
  const server = createServer((req, res) => {
    calls++;
    req.resume();
    const id = req.url!.split('/').pop()!;
    const body = JSON.stringify({ id, unit: Number(id.replace(/\D/g, '')) + 0.5 });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, calls: () => calls };
}

/** POSTs `count` deliveries with distinct correlation ids, `IN_FLIGHT` at a time; returns how many did not answer 201. */
async function record(runUrl: string, key: string, count: number): Promise<number> {
  let next = 0;
  let failures = 0;
  const worker = async () => {
    while (next < count) {
      const id = `q-${String(next++).padStart(5, '0')}`;
      const res = await fetch(runUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-correlation-id': id },
        body: JSON.stringify({ id, qty: 1 + (next % 7) }),
      });
      await res.arrayBuffer();
      if (res.status !== 201) failures++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return failures;
}

/** Runs `svc <args>` as a child (not synchronously: the backend in this process must stay able to answer, and be counted). */
function svcAsync(
  env: NodeJS.ProcessEnv,
  args: readonly string[],
  nodeArgs: readonly string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [...nodeArgs, SVC, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', rej);
    child.once('close', (code) => res({ code, stdout, stderr }));
  });
}

export async function benchReplay(
  opts: { deliveries?: number; rounds?: number; cpuProfDir?: string } = {},
): Promise<ReplayBench> {
  const deliveries = opts.deliveries ?? 10_000;
  const rounds = Math.max(1, opts.rounds ?? 3);
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-replay-'));
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const backend = await startBackend();
  let server: Child | undefined;
  try {
    svcCli(SVC, env, ['tenant', 'create', '--id', TENANT, '--display-name', 'Bench', '--db', db]);
    // Its stderr says to store the key: not a line of this report.
    const keyOut = execFileSync(
      process.execPath,
      [SVC, 'keys', 'create', '--tenant', TENANT, '--label', 'bench', '--db', db],
      { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const key = /svk_[0-9a-f]{32}/.exec(keyOut)?.[0];
    if (!key) throw new Error(`no key in: ${keyOut}`);
    const candidate = join(dirname(db), `${FLOW}.flow.md`);
    deployFlow(SVC, env, db, `${FLOW}.flow.md`, flowText(backend.url));
    svcCli(SVC, env, ['trace', 'enable', '--tenant', TENANT, '--flow', FLOW, '--db', db]);

    server = await spawnListening(
      process.execPath,
      [SVC, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db],
      env,
    );
    const started = process.hrtime.bigint();
    const recordFailures = await record(`${server.url}/flows/${TENANT}/${FLOW}/run`, key, deliveries);
    // SIGTERM flushes the batching log writer: every row is in log.db once the process has exited.
    await server.stop();
    server = undefined;
    const recordMs = Number(process.hrtime.bigint() - started) / 1e6;
    if (backend.calls() !== deliveries)
      throw new Error(`the backend got ${backend.calls()} requests while recording ${deliveries} deliveries`);

    const before = backend.calls();
    const roundsMs: number[] = [];
    const counts: ReplayCounts[] = [];
    const args = ['replay', '--tenant', TENANT, '--flow', FLOW, '--candidate', candidate, '--json', '--db', db];
    for (let r = 0; r < rounds; r++) {
      const nodeArgs = opts.cpuProfDir === undefined || r > 0 ? [] : ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir];
      const t0 = process.hrtime.bigint();
      const out = await svcAsync(env, args, nodeArgs);
      roundsMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      const last = out.stdout.trimEnd().split('\n').pop() ?? '';
      let parsed: ReplayCounts | undefined;
      try {
        parsed = JSON.parse(last) as ReplayCounts;
      } catch {
        throw new Error(
          `svc replay exited ${out.code} without a counts line:\n${out.stdout.slice(-2000)}${out.stderr}`,
        );
      }
      counts.push(parsed);
    }
    const medianMs = [...roundsMs].sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
    return {
      deliveries,
      recordMs,
      recordFailures,
      roundsMs,
      medianMs,
      counts,
      backendCallsDuringReplay: backend.calls() - before,
    };
  } finally {
    await server?.stop().catch(() => undefined);
    await new Promise<void>((r) => backend.server.close(() => r()));
    rmSync(home, { recursive: true, force: true });
  }
}

export function reportReplay(b: ReplayBench): string {
  const perSec = (n: number, ms: number) => Math.round((n * 1000) / ms);
  const wall = `${Math.round(b.medianMs)} ms wall`;
  const rounds = b.roundsMs.map((m) => Math.round(m)).join(' / ');
  const recording = `recording: ${b.deliveries} deliveries in ${Math.round(b.recordMs)} ms, ${perSec(b.deliveries, b.recordMs)}/s, ${IN_FLIGHT} in flight${b.recordFailures > 0 ? `, ${b.recordFailures} not answered 201` : ''}`;
  const backend = `backend requests during replay: ${b.backendCallsDuringReplay}`;
  const broken = b.counts.some(
    (c) => c.deliveries !== b.deliveries || c.same !== b.deliveries || c.differs !== 0 || c.not_replayable !== 0,
  );
  if (broken || b.backendCallsDuringReplay > 0 || b.recordFailures > 0) {
    const seen = b.counts
      .map((c) => `${c.deliveries} deliveries: ${c.same} same, ${c.differs} differ, ${c.not_replayable} not replayable`)
      .join('; ');
    const found = b.counts[0]?.deliveries ?? 0;
    return (
      `svc replay, ${b.deliveries} recorded deliveries: BROKEN RUN, NOT A FIGURE (expected ${b.deliveries} deliveries, all same, no backend request)\n` +
      `  svc replay said: ${seen}\n` +
      `  ${wall}, median of ${rounds}, i.e. ${perSec(found, b.medianMs)}/s over the ${found} it replayed; ${backend}; ${recording}\n`
    );
  }
  return `svc replay, ${b.deliveries} recorded deliveries (one process, start included): ${wall}, ${perSec(b.deliveries, b.medianMs)} deliveries/s, median of ${rounds} (all same; ${backend}; ${recording})\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      deliveries: { type: 'string' },
      rounds: { type: 'string' },
      'cpu-prof-dir': { type: 'string' },
    },
  });
  const b = await benchReplay({
    deliveries: values.deliveries === undefined ? undefined : Number(values.deliveries),
    rounds: values.rounds === undefined ? undefined : Number(values.rounds),
    cpuProfDir: values['cpu-prof-dir'],
  });
  process.stdout.write(reportReplay(b));
}

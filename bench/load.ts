/** Shared benchmark plumbing: autocannon runs, a bare node:http baseline, child processes stopped by PID. */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';

export interface LoadResult {
  readonly label: string;
  readonly reqPerSec: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationSec?: number;
}

export async function load(label: string, opts: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'POST',
    headers: opts.headers ?? {},
    body: opts.body,
    connections: opts.connections ?? 32,
    duration: opts.durationSec ?? 8,
  });
  return {
    label,
    reqPerSec: result.requests.average,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** Rounds of one measurement folded into one: mean req/s, worst p99, summed failures. */
export function combine(rounds: readonly LoadResult[]): LoadResult {
  return {
    label: rounds[0]!.label,
    reqPerSec: rounds.reduce((a, r) => a + r.reqPerSec, 0) / rounds.length,
    p99Ms: Math.max(...rounds.map((r) => r.p99Ms)),
    non2xx: rounds.reduce((a, r) => a + r.non2xx, 0),
    errors: rounds.reduce((a, r) => a + r.errors, 0),
  };
}

/** The baseline: a bare node:http server answering the same JSON, as its own process. */
export const BARE_SERVER_SOURCE = `
const http = require('node:http');
const answer = JSON.stringify({ id: 'o-1', total: 42, status: 'accepted' });
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString() || 'null');
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
  });
});
server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

export interface Child {
  readonly process: ChildProcess;
  readonly url: string;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** How long to wait for the listening line. @default 30000 */
  readonly timeoutMs?: number;
  /** The child's stderr: shown (inherit) or dropped (a tool's own chatter, valgrind's). @default 'inherit' */
  readonly stderr?: 'inherit' | 'ignore';
}

/** Spawns a process and waits for a `listening on http://...` line on stdout. */
export async function spawnListening(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  opts: SpawnOptions = {},
): Promise<Child> {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', opts.stderr ?? 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`no listening line from ${cmd} ${args.join(' ')}: ${out}`)),
      opts.timeoutMs ?? 30_000,
    );
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`${cmd} exited with ${code}: ${out}`)));
  });
  return {
    process: child,
    url,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function printTable(rows: readonly LoadResult[]): void {
  for (const r of rows) {
    process.stdout.write(
      `${r.label.padEnd(34)} ${r.reqPerSec.toFixed(0).padStart(8)} req/s   p99 ${String(r.p99Ms).padStart(5)} ms   non-2xx ${r.non2xx}   errors ${r.errors}\n`,
    );
  }
}

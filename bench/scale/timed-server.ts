/**
 * A `svc serve` child process whose start-up is timed from the spawn: until `/health` answers 200
 * and until the first /run succeeds. The port is chosen before the spawn so `/health` can be polled
 * from the first millisecond (the "listening on" line is printed only once every part has started).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Child } from '../load.js';

export interface TimedServer extends Child {
  readonly pid: number;
  /** From spawn until GET /health answered 200. */
  readonly healthMs: number;
  /** From spawn until the first POST of `probe` answered 200. */
  readonly firstRunMs: number;
}

export interface RunProbe {
  /** Path of the /run route, e.g. `/flows/t0001/quote-00001/run`. */
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Interval between polls while the server starts. */
const POLL_MS = 5;
const START_TIMEOUT_MS = 120_000;

/** A port free at the moment of asking (the OS hands out a fresh one; reuse before the spawn is unlikely). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function status(url: string, init?: RequestInit): Promise<number | undefined> {
  try {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    return res.status;
  } catch {
    return undefined; // not listening yet
  }
}

/**
 * Starts `svc serve` on `db` (cwd `cwd`, so no stray .env is read) and waits until `probe` runs.
 * @throws when the server exits or does not answer within two minutes (the child is stopped first)
 */
export async function startTimedServer(opts: {
  svcBin: string;
  db: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  probe: RunProbe;
}): Promise<TimedServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [opts.svcBin, 'serve', '--host', '127.0.0.1', '--port', String(port), '--db', opts.db],
    {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(child.pid!, 'SIGTERM');
    const timer = setTimeout(
      () => child.exitCode === null && child.signalCode === null && process.kill(child.pid!, 'SIGKILL'),
      5000,
    );
    await exited;
    clearTimeout(timer);
  };
  const waitFor = async (what: string, ok: () => Promise<boolean>): Promise<number> => {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`svc serve exited (${child.exitCode ?? child.signalCode}) before ${what}: ${stderr.trim()}`);
      if (await ok()) return performance.now() - t0;
      if (performance.now() - t0 > START_TIMEOUT_MS)
        throw new Error(`svc serve: no ${what} within ${START_TIMEOUT_MS / 1000} s: ${stderr.trim()}`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  try {
    const healthMs = await waitFor('/health answering 200', async () => (await status(`${url}/health`)) === 200);
    const init = { method: 'POST', headers: opts.probe.headers, body: opts.probe.body };
    const firstRunMs = await waitFor(
      `a 200 from ${opts.probe.path}`,
      async () => (await status(`${url}${opts.probe.path}`, init)) === 200,
    );
    return { process: child, pid: child.pid!, url, stop, healthMs, firstRunMs };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Resident set size of a process, from /proc/<pid>/status (VmRSS), in bytes. */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

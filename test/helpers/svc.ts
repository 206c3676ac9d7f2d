/** Black-box helpers: run the built `svc` as a child process against a throwaway state directory. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/src/main.js, found from this compiled file (dist/test/helpers/svc.js). */
export const SVC_BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/main.js');

export interface Sandbox {
  /** HOME for the child: nothing touches a real home directory. */
  readonly home: string;
  /** A registry database path inside the sandbox. */
  readonly db: string;
  readonly env: NodeJS.ProcessEnv;
  cleanup(): void;
}

export function makeSandbox(extraEnv: NodeJS.ProcessEnv = {}): Sandbox {
  const home = mkdtempSync(join(tmpdir(), 'svc-test-'));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, RUST_LOG: 'warn', ...extraEnv };
  delete env.NODE_TEST_CONTEXT;
  return {
    home,
    db: join(home, 'state', 'registry.db'),
    env,
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `svc <args>` to completion (cwd is the sandbox so no stray .env is read). */
export function svc(sandbox: Sandbox, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): CliResult {
  const r = spawnSync(process.execPath, [SVC_BIN, ...args], {
    cwd: opts.cwd ?? sandbox.home,
    env: { ...sandbox.env, ...opts.env },
    input: opts.input,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly port: number;
  /** Everything the server printed on stdout so far. */
  output(): string;
  stderr(): string;
  /** SIGTERM, wait for exit (SIGKILL after 5 s); resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL at once. */
  kill9(): Promise<void>;
}

/** Starts `svc serve` on a free loopback port and waits for its boot line. */
export async function startServer(sandbox: Sandbox, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', sandbox.db, ...args], {
    cwd: sandbox.home,
    env: { ...sandbox.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`server did not boot in 20 s\nstdout:${out}\nstderr:${err}`)), 20_000);
    const check = () => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        res(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      rej(new Error(`server exited with ${code} before booting\nstdout:${out}\nstderr:${err}`));
    });
  });
  return {
    child,
    url,
    port: Number(new URL(url).port),
    output: () => out,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    kill9: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Black-box helpers: run the built `svc` as a child process against a throwaway state directory,
 * or, in the suite's PostgreSQL pass (SVC_TEST_STORE=postgres), against a throwaway schema of the
 * test PostgreSQL: each sandbox then has a store URL of its own, every `--db <sandbox db>` a test
 * passes becomes `--store <that URL>`, and SVC_STORE_URL is in the child's environment.
 */
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { schemaUrl } from './pg.js';
import { dropPgSchema } from './store-sql.js';

/** dist/src/main.js, found from this compiled file (dist/test/helpers/svc.js). */
export const SVC_BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/main.js');

export interface Sandbox {
  /** HOME for the child: nothing touches a real home directory. */
  readonly home: string;
  /** A registry database path inside the sandbox. */
  readonly db: string;
  /** In the PostgreSQL pass: the store URL (a schema of its own) that stands for `db`. */
  readonly store?: string;
  readonly env: NodeJS.ProcessEnv;
  cleanup(): void;
}

/** True in the suite's PostgreSQL pass: every sandbox is a schema of the test PostgreSQL. */
export const ON_PG_STORE = process.env.SVC_TEST_STORE === 'postgres';

/**
 * Why a test does not run in the current pass, for `{ skip }`: `onlyOn('sqlite', why)` on a test
 * of the state directory itself (its files, its locks, its disk), `onlyOn('postgres', ...)` the
 * other way round. Undefined when the test runs.
 */
export function onlyOn(store: 'sqlite' | 'postgres', why: string): string | undefined {
  return (store === 'postgres') === ON_PG_STORE ? undefined : `${store} pass only: ${why}`;
}

/** Store URL of each sandbox db path made in this process, for the `--db` → `--store` swap. */
const storeOfDb = new Map<string, string>();

export function makeSandbox(extraEnv: NodeJS.ProcessEnv = {}): Sandbox {
  const home = mkdtempSync(join(tmpdir(), 'svc-test-'));
  const db = join(home, 'state', 'registry.db');
  const schema = ON_PG_STORE ? `svcbb_${process.pid}_${randomBytes(4).toString('hex')}` : undefined;
  const store = schema === undefined ? undefined : schemaUrl(schema);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    RUST_LOG: 'warn',
    ...(store === undefined ? {} : { SVC_STORE_URL: store }),
    ...extraEnv,
  };
  delete env.NODE_TEST_CONTEXT;
  delete env.SVC_TEST_STORE;
  if (store !== undefined) storeOfDb.set(db, store);
  return {
    home,
    db,
    ...(store === undefined ? {} : { store }),
    env,
    cleanup: () => {
      rmSync(home, { recursive: true, force: true });
      if (store !== undefined && schema !== undefined) {
        storeOfDb.delete(db);
        dropPgSchema(store, schema);
      }
    },
  };
}

/** In the PostgreSQL pass, `--db <a sandbox's db>` becomes `--store <its URL>`; otherwise the args as given. */
export function storeArgs(args: readonly string[]): string[] {
  if (!ON_PG_STORE) return [...args];
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const store = args[i] === '--db' ? storeOfDb.get(args[i + 1] ?? '') : undefined;
    if (store === undefined) out.push(args[i]!);
    else {
      out.push('--store', store);
      i++;
    }
  }
  return out;
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `svc <args>` to completion (cwd is the sandbox so no stray .env is read). */
export function svc(
  sandbox: Sandbox,
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): CliResult {
  const r = spawnSync(process.execPath, [SVC_BIN, ...storeArgs(args)], {
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
export async function startServer(
  sandbox: Sandbox,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  // In the PostgreSQL pass the node also writes its daily files where the state directory keeps them.
  const logFiles =
    sandbox.store === undefined || args.includes('--log-files')
      ? []
      : ['--log-files', join(dirname(sandbox.db), 'logs')];
  const child = spawn(
    process.execPath,
    [
      SVC_BIN,
      // A node given its own --store takes no --db (both name a store: exit 2).
      ...storeArgs([
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        ...(args.includes('--store') ? [] : ['--db', sandbox.db]),
        ...logFiles,
        ...args,
      ]),
    ],
    {
      cwd: sandbox.home,
      env: { ...sandbox.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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

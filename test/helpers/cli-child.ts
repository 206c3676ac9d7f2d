/** A long-running `svc` command (`logs --follow`, `dev`) as a child process: its output as it comes, and a stop by PID. */
import { spawn, type ChildProcess } from 'node:child_process';
import { SVC_BIN, storeArgs, type Sandbox } from './svc.js';
import { sleep } from './wait.js';

export interface CliChild {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Waits (bounded) until stdout or stderr matches; returns the match. */
  waitForOutput(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /**
   * Sends `signal` to the child's PID (a `detached` child: to its whole process group, as a
   * terminal's Ctrl-C reaches a foreground job) and waits for its exit (SIGKILL after 10 s); resolves with the exit code.
   */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface CliChildOptions {
  /** In a process group of its own (see `stop`). @default false */
  readonly detached?: boolean;
  /**
   * The program to run `args` with (an installed `svc`, say); its args are taken as given.
   * @default this checkout's svc on this Node, with `--db` swapped for `--store` in the PostgreSQL pass
   */
  readonly program?: string;
  /** @default the sandbox's home */
  readonly cwd?: string;
  /** @default the sandbox's environment */
  readonly env?: NodeJS.ProcessEnv;
}

export function startCli(sandbox: Sandbox, args: string[], opts: CliChildOptions = {}): CliChild {
  const detached = opts.detached === true;
  const [file, argv] =
    opts.program === undefined ? [process.execPath, [SVC_BIN, ...storeArgs(args)]] : [opts.program, args];
  const child = spawn(file, argv, {
    cwd: opts.cwd ?? sandbox.home,
    env: opts.env ?? sandbox.env,
    detached,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitForOutput: async (stream, pattern, timeoutMs = 20_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const m = (stream === 'stdout' ? out : err).match(pattern);
        if (m) return m;
        // A child that has exited will print nothing more: fail at once, with what it said.
        const gone = child.exitCode !== null || child.signalCode !== null;
        if (gone || Date.now() > end) {
          throw new Error(
            `${gone ? `svc ${args.join(' ')} exited ${child.exitCode ?? child.signalCode}` : `timed out after ${timeoutMs} ms`} waiting for ${stream} to match ${pattern}\nstdout:\n${out}\nstderr:\n${err}`,
          );
        }
        await sleep(25);
      }
    },
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      process.kill(detached ? -child.pid! : child.pid!, signal);
      const timer = setTimeout(() => process.kill(detached ? -child.pid! : child.pid!, 'SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

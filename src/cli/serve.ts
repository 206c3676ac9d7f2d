/** `svc serve`: start the service and stop it cleanly on SIGINT or SIGTERM. */
import { Command, Option } from 'commander';
import { ExitError } from '../common/errors.js';
import { addStoreOptions, intArg } from './options.js';
import { GROUP_MEMBER_FLAG, groupRefusal, memberArgs, processesArg, sharedPort } from './serve-processes.js';

export function registerServe(program: Command): void {
  const serveCommand = program
    .command('serve')
    .description('start the service: HTTP routes, workers, scheduler and housekeeping')
    .addOption(new Option('--host <addr>', 'bind address').default('0.0.0.0'))
    .addOption(new Option('-p, --port <n>', 'bind port').default(9090).argParser(intArg('--port')));
  // --db and --store (or SVC_STORE_URL) name two different stores: both is a usage error (exit 2), as on every other command.
  addStoreOptions(serveCommand)
    .addOption(
      new Option(
        '--log-files <dir>',
        "with --store: also write this node's daily JSON Lines files of the event log to <dir>",
      ),
    )
    .addOption(
      new Option('--grpc-port <n>', 'open the gRPC door on this plaintext HTTP/2 port (0: any free port)').argParser(
        intArg('--grpc-port'),
      ),
    )
    .addOption(
      new Option('--secret <key>', 'require X-Svc-Signature (hex HMAC-SHA256 of the body) on /run and /enqueue'),
    )
    .addOption(new Option('--no-auth', 'disable API key authentication (local development only)'))
    .addOption(
      new Option('--metrics', 'serve Prometheus metrics at GET /metrics on the main port (public, like /health)'),
    )
    .addOption(
      new Option(
        '--metrics-port <n>',
        'serve GET /metrics on this port of --host instead (implies --metrics)',
      ).argParser(intArg('--metrics-port')),
    )
    .addOption(
      new Option(
        '--no-rollups',
        "count no per-minute rollups: the UI's charts and live numbers stay empty for this server's deliveries (the event log is written as ever)",
      ),
    )
    .addOption(
      new Option(
        '--processes <n|auto>',
        'run n full server processes on the one port (SO_REUSEPORT), restarted when one dies and stopped together; auto: one per CPU',
      ).argParser(processesArg),
    )
    .addOption(new Option(GROUP_MEMBER_FLAG, 'set by --processes on each of its processes').hideHelp())
    .action(serve);
}

interface ServeFlags {
  host: string;
  port: number;
  db: string;
  store?: string;
  logFiles?: string;
  grpcPort?: number;
  secret?: string;
  auth: boolean;
  metrics?: boolean;
  metricsPort?: number;
  /** Commander's negation of --no-rollups: false when it was given. */
  rollups: boolean;
  processes?: number;
  groupMember?: boolean;
}

async function serve(flags: ServeFlags): Promise<void> {
  if (flags.processes !== undefined && flags.processes > 1) return serveGroup(flags, flags.processes);
  if (flags.logFiles !== undefined && flags.store === undefined)
    throw new ExitError(
      2,
      "svc serve: --log-files goes with --store (without it the daily files are in the state directory's logs/)",
    );
  // Loaded here so other commands do not pay for fastify and the doors.
  const { startService } = await import('../serve/service.js');
  let stopRequested = false;
  const early = () => (stopRequested = true);
  process.on('SIGINT', early);
  process.on('SIGTERM', early);
  const service = await startService({
    host: flags.host,
    port: flags.port,
    db: flags.db,
    store: flags.store,
    logFilesDir: flags.logFiles,
    grpcPort: flags.grpcPort,
    secret: flags.secret,
    noAuth: !flags.auth,
    metrics: flags.metrics === true,
    metricsPort: flags.metricsPort,
    noRollups: !flags.rollups,
    reusePort: flags.groupMember === true,
  });
  process.stdout.write(`${service.bootLines.join('\n')}\n`);
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      process.off('SIGINT', early);
      process.off('SIGTERM', early);
      // A second Ctrl-C ends a lone server at once (the signal's default). A group's member keeps
      // ignoring: a Ctrl-C reaches it and its group alike, and the group then asks it to stop too.
      if (flags.groupMember !== true) {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
      service.close().then(resolve, (err: unknown) => {
        service.log.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // A member of a --processes group stops with its group's process, however that one ended (kill
    // -9 included). The channel itself must not keep a stopped member alive: unreferenced.
    if (flags.groupMember === true) {
      process.channel?.unref();
      process.once('disconnect', stop);
    }
    if (stopRequested || (flags.groupMember === true && !process.connected)) stop();
  });
}

/** `--processes n`: this process keeps n members (serve/process-group.ts) and serves nothing itself. */
async function serveGroup(flags: ServeFlags, count: number): Promise<void> {
  const group = {
    processes: count,
    port: flags.port,
    grpcPort: flags.grpcPort,
    metrics: flags.metrics,
    metricsPort: flags.metricsPort,
  };
  const refusal = groupRefusal(group);
  if (refusal !== undefined) throw new ExitError(2, refusal);
  const { ProcessGroup } = await import('../serve/process-group.js');
  const port = await sharedPort(flags.host, flags.port);
  const typed = process.argv.slice(2);
  const members = new ProcessGroup({
    count,
    execPath: process.execPath,
    execArgv: [...process.execArgv, process.argv[1]!],
    argsFor: (slot) => memberArgs(typed, slot, port, group),
    env: process.env,
    say: (line) => process.stderr.write(`${line}\n`),
  });
  members.start();
  process.stdout.write(
    `svc serve: ${count} processes on port ${port} of ${flags.host} (SO_REUSEPORT), process ids ${members.pids.join(', ')}; SIGINT or SIGTERM stops them all\n`,
  );
  const code = await new Promise<number>((resolve) => {
    const stop = () => void members.stop().then(resolve);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  if (code !== 0) throw new ExitError(1, 'svc serve: a process of the group did not stop cleanly');
}

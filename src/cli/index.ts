/**
 * The command table: one line per command group, each group in its own file, loaded only when
 * needed. Importing every group's module (and the use cases behind it) cost about 500 ms of a
 * 0.7 s `svc --help` on a quiet machine and the same at every `svc serve` start and every
 * one-file `svc deploy`; a run that names its command loads that group alone. Help, `svc help`
 * and anything not naming a known command load them all, in this order.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';

type Register = (program: Command) => void;

interface CommandGroup {
  /** The top-level command names the group registers. */
  readonly names: readonly string[];
  readonly load: () => Promise<Register>;
}

const GROUPS: readonly CommandGroup[] = [
  { names: ['serve'], load: async () => (await import('./serve.js')).registerServe },
  {
    names: ['validate', 'compile', 'deploy'],
    load: async () => (await import('./flow-commands.js')).registerFlowCommands,
  },
  { names: ['replay'], load: async () => (await import('./replay.js')).registerReplay },
  { names: ['test'], load: async () => (await import('./test.js')).registerTest },
  { names: ['dev'], load: async () => (await import('./dev.js')).registerDev },
  { names: ['flows'], load: async () => (await import('./flows.js')).registerFlows },
  { names: ['logs'], load: async () => (await import('./logs.js')).registerLogs },
  { names: ['proto'], load: async () => (await import('./proto.js')).registerProto },
  { names: ['tenant'], load: async () => (await import('./tenant.js')).registerTenant },
  { names: ['keys'], load: async () => (await import('./keys.js')).registerKeys },
  { names: ['audit'], load: async () => (await import('./audit.js')).registerAudit },
  { names: ['dlq'], load: async () => (await import('./dlq.js')).registerDlq },
  { names: ['state'], load: async () => (await import('./state.js')).registerState },
  { names: ['storage'], load: async () => (await import('./storage.js')).registerStorage },
  { names: ['store'], load: async () => (await import('./store.js')).registerStore },
  { names: ['settings'], load: async () => (await import('./settings.js')).registerSettings },
  { names: ['trace'], load: async () => (await import('./trace.js')).registerTrace },
  { names: ['ui'], load: async () => (await import('./ui.js')).registerUi },
  { names: ['cert'], load: async () => (await import('./cert.js')).registerCert },
  { names: ['seed'], load: async () => (await import('./seed.js')).registerSeed },
  { names: ['simulate'], load: async () => (await import('./simulate.js')).registerSimulate },
  {
    names: ['config'],
    load: async () => {
      const m = await import('./config-check.js');
      return (program) => m.registerConfigCheck(program, m.registryConfigSource);
    },
  },
];

/** The package's version, from its package.json (dist/src/cli/ is three levels below it, in a checkout and installed alike). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * The `svc` program. `argv` (process.argv) picks what is loaded: when its first argument names a
 * command, only that command's group; otherwise (no argument, an option such as `--help`, `help`,
 * an unknown word) every group, so help lists them all and an unknown command is reported as such.
 */
export async function buildCli(argv?: readonly string[]): Promise<Command> {
  const program = new Command('svc')
    .description('Flow execution service: publish Markdown flows and run them over HTTP, queues, cron, gRPC and SOAP')
    .version(
      `svc ${packageVersion()} (Node ${process.version})`,
      '-V, --version',
      'print the version of svc and of its Node',
    )
    // svc's own options count only before a command: `svc flows show --version 1.0.0` is the command's.
    .enablePositionalOptions()
    // One line after an error, not the whole help (a mistyped command printed its suggestion, then 90 lines).
    .showHelpAfterError('(svc --help lists the commands; svc <command> --help, their options)')
    .exitOverride();
  const first = argv?.[2];
  const named = first === undefined ? undefined : GROUPS.find((g) => g.names.includes(first));
  const groups = named === undefined ? GROUPS : [named];
  const registers = await Promise.all(groups.map((g) => g.load()));
  for (const register of registers) register(program);
  return program;
}

/** `svc validate`, `svc compile`, `svc deploy`: check, lower and publish `.flow.md` files (deploy: one, many, or directories of them). */
import { Command, Option } from 'commander';
import { existsSync, writeFileSync } from 'node:fs';
import {
  DeployRefusedError,
  ReplayDiffersError,
  deployFlows,
  type DeployReplay,
  type FlowReplay,
  listFlowFiles,
  type DeployOptions,
  type DeployRefusal,
  type DeployResult,
} from '../app/use-cases/deploy.js';
import { compileFile, validateFile, type SourceOptions } from '../app/use-cases/publish.js';
import { ExitError, SvcError } from '../common/errors.js';
import {
  formatDiagnostic,
  formatWarning,
  FlowPublicationError,
  type FlowDiagnostic,
  type FlowWarning,
} from '../flow/diagnostics.js';
import { addStoreOptions, type StoreFlags } from './options.js';
import { registryLocation, withStore } from './stores.js';
import { formatTable, out } from './table.js';
import { testFiles } from './test.js';
import { countsLine, verdictLine } from './replay-lines.js';
import { parseSince } from '../app/use-cases/event-search.js';
import { EXAMPLE_DOORS } from '../serve/example-doors.js';
import { openScratchFlowState, type OpenedStore } from '../storage/index.js';
import { statePaths } from '../common/paths.js';

const libsOption = () => new Option('--libs <dir>', 'directory of *.lib.md step libraries for "use: <library>/<step>"');

export function registerFlowCommands(program: Command): void {
  program
    .command('validate')
    .description(
      'parse a flow and resolve its names (fewer checks than compile); exit 0 clean or with warnings only, 1 with errors',
    )
    .argument('<path>', '.flow.md file')
    .addOption(libsOption())
    .action((path: string, flags: { libs?: string }) => validate({ path, libs: flags.libs }));
  program
    .command('compile')
    .description('compile a flow and print its IR as JSON (stores nothing); with -o write it and print the hash')
    .argument('<path>', '.flow.md file')
    .option('-o, --out <path>', 'write the IR to this file and print its hash')
    .option('-p, --pretty', 'indent the JSON (the hash is always that of the compact artifact bytes)')
    .addOption(libsOption())
    .action((path: string, flags: { out?: string; pretty?: boolean; libs?: string }) => compile({ path, ...flags }));
  const deployCommand = program
    .command('deploy')
    .description(
      'compile flows and publish them under (tenant, flow, version), moving latest; tenant and flow come from each front matter. ' +
        'Several files, or a directory (its own *.flow.md files; subfolders are not read), are published all or nothing in one transaction: ' +
        'when any file is refused (errors, unreadable, unknown or disabled tenant, version already published, two files naming one flow) ' +
        'nothing is published, every refused file is reported as "file: reason" and the exit status is 1',
    )
    .argument('<path...>', '.flow.md files and directories of them')
    .requiredOption(
      '-v, --version <version>',
      'version label, unique per flow (e.g. 1.0.0); every flow of the deploy gets it',
    )
    .addOption(libsOption())
    .addOption(
      new Option(
        '--json',
        'print one JSON object {db, deployed: [{file, tenant, flow, version, hash, warnings}]}; when refused {deployed: [], refused: [{file, message, code | diagnostics}]} and exit 1',
      ),
    )
    .addOption(
      new Option(
        '--test',
        'run the examples of the files deployed first (svc test, in this process) and publish nothing unless every one passes',
      ),
    )
    .addOption(
      new Option(
        '--replay-since <when>',
        "replay each flow's deliveries traced since then (a duration: 1h, 7d; or a UTC day or instant) against the version being deployed, and publish nothing if any differs; the counts go into each flow's flow.deployed audit entry",
      ),
    )
    .addOption(new Option('--accept-differences', 'with --replay-since: publish even when deliveries differ'))
    .addOption(
      new Option('--ignore-volatile', 'with --replay-since: leave out the paths each flow declares in replay_volatile'),
    )
    .action((paths: string[], flags: Omit<DeployCommandOptions, 'paths'>) => deploy({ paths, ...flags }));
  addStoreOptions(deployCommand);
}

/** Every warning, then every error, then the count: the verdict of a refused flow. */
function verdict(diagnostics: readonly FlowDiagnostic[], warnings: readonly FlowWarning[]): string {
  const n = diagnostics.length;
  return `${[...warnings.map(formatWarning), ...diagnostics.map(formatDiagnostic)].join('\n')}\n${n} error${n === 1 ? '' : 's'}`;
}

function refusal(diagnostics: readonly FlowDiagnostic[], warnings: readonly FlowWarning[] = []): ExitError {
  return new ExitError(1, `${verdict(diagnostics, warnings)}; nothing was published`);
}

function refuse(diagnostics: readonly FlowDiagnostic[], warnings: readonly FlowWarning[] = []): never {
  throw refusal(diagnostics, warnings);
}

/** Warnings never fail a command: they go to stderr, beside whatever the command prints on stdout. */
function printWarnings(warnings: readonly FlowWarning[]): void {
  for (const w of warnings) process.stderr.write(`${formatWarning(w)}\n`);
}

/** A refusal as validate, compile and the one-file deploy print it: the verdict, or `error: message`. */
function exitFor(err: unknown): unknown {
  if (err instanceof FlowPublicationError) return refusal(err.diagnostics, err.warnings);
  if (err instanceof SvcError) return new ExitError(1, `error: ${err.message}`);
  return err;
}

function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw exitFor(err);
  }
}

export function validate(opts: SourceOptions): void {
  const r = guard(() => validateFile(opts));
  if (r.diagnostics.length > 0) throw new ExitError(1, verdict(r.diagnostics, r.warnings));
  printWarnings(r.warnings);
  process.stdout.write(`${opts.path}: ok\n`);
}

export function compile(opts: SourceOptions & { out?: string; pretty?: boolean }): void {
  const r = guard(() => compileFile(opts));
  if (!r.ir || !r.bytes || !r.hash) refuse(r.diagnostics, r.warnings);
  printWarnings(r.warnings);
  const text = opts.pretty ? `${JSON.stringify(r.ir, null, 2)}\n` : r.bytes;
  if (opts.out) {
    writeFileSync(opts.out, text);
    process.stdout.write(`${r.hash}\n`);
  } else {
    process.stdout.write(opts.pretty ? text : `${text}\n`);
  }
}

export interface DeployCommandOptions extends DeployOptions, StoreFlags {
  json?: boolean;
  /** Run the examples of the files deployed first; publish nothing unless every one passes. */
  test?: boolean;
  /** Replay the deliveries traced since then against the new versions first (a duration or a UTC day or instant). */
  replaySince?: string;
  acceptDifferences?: boolean;
  ignoreVolatile?: boolean;
}

export async function deploy(opts: DeployCommandOptions): Promise<void> {
  const since = replaySince(opts);
  if (opts.test) await examplesPass(opts);
  let r: DeployResult;
  try {
    // A registry that does not exist is opened read-only: it reads as empty and is not created (the
    // deploy is refused anyway, as no tenant is registered there). Otherwise the audit entries are written.
    const readOnly = opts.store === undefined && !existsSync(statePaths(opts.db).registryDb);
    r = await withStore(
      opts,
      (s) =>
        deployFlows(opts, {
          artifacts: s.artifacts,
          location: registryLocation(opts),
          audit: readOnly ? undefined : s.audit,
          replay: since === undefined ? undefined : deployReplay(s, since, opts),
        }),
      { readOnly },
    ).catch((err: unknown) => {
      throw exitFor(err);
    });
  } catch (err) {
    if (err instanceof ReplayDiffersError) {
      if (opts.json) out(JSON.stringify({ deployed: [], replay: err.replays.map(replayJson) }, null, 2));
      else printReplays(err.replays);
      throw new ExitError(1, `refused: ${err.message}`);
    }
    if (!(err instanceof DeployRefusedError)) throw err;
    if (opts.json) out(JSON.stringify({ deployed: [], refused: err.refusals.map(refusalJson) }, null, 2));
    if (err.singleFile && err.refusals.length === 1) throw exitFor(err.refusals[0]!.error);
    throw new ExitError(1, [...err.refusals.map(refusalText), err.message].join('\n'));
  }
  for (const d of r.deployed) printWarnings(d.warnings);
  if (opts.json) {
    out(
      JSON.stringify(
        { db: r.db, deployed: r.deployed, ...(r.replays ? { replay: r.replays.map(replayJson) } : {}) },
        null,
        2,
      ),
    );
    return;
  }
  if (r.replays !== undefined) printReplays(r.replays);
  if (r.singleFile) {
    const d = r.deployed[0]!;
    out(
      `deployed\n  flow:    ${d.flow}\n  tenant:  ${d.tenant}\n  version: ${d.version}\n  hash:    ${d.hash}\n  db:      ${r.db}`,
    );
  } else {
    out(
      formatTable(
        ['TENANT', 'FLOW', 'VERSION', 'HASH', 'FILE'],
        r.deployed.map((d) => [d.tenant, d.flow, d.version, d.hash.slice(0, 12), d.file]),
      ),
    );
    out(`deployed ${r.deployed.length} flow${r.deployed.length === 1 ? '' : 's'} to ${r.db}`);
  }
}

/** `--replay-since` as an instant; the flags that only mean something with it are refused without it. */
function replaySince(opts: DeployCommandOptions): string | undefined {
  if (opts.replaySince === undefined) {
    for (const [flag, set] of [
      ['--accept-differences', opts.acceptDifferences],
      ['--ignore-volatile', opts.ignoreVolatile],
    ] as const)
      if (set) throw new ExitError(1, `error: ${flag} only applies with --replay-since`);
    return undefined;
  }
  try {
    return parseSince(opts.replaySince);
  } catch (err) {
    if (err instanceof SvcError) throw new ExitError(1, `error: --replay-since: ${err.message}`);
    throw err;
  }
}

function deployReplay(s: OpenedStore, since: string, opts: DeployCommandOptions): DeployReplay {
  return {
    log: s.eventLog,
    since,
    acceptDifferences: opts.acceptDifferences === true,
    ignoreVolatile: opts.ignoreVolatile === true,
    context: { doors: EXAMPLE_DOORS, flowState: openScratchFlowState },
  };
}

/** Each flow's replay: a line per delivery that is not the same, then its counts (paths only, never a value). */
function printReplays(replays: readonly FlowReplay[]): void {
  for (const r of replays) {
    out(`replay of ${r.tenant}/${r.flow}:`);
    for (const d of r.results) if (d.verdict.kind !== 'same') out(`  ${verdictLine(d)}`);
    out(`  ${countsLine(r.counts)}`);
  }
}

function replayJson(r: FlowReplay): Record<string, unknown> {
  return {
    tenant: r.tenant,
    flow: r.flow,
    file: r.file,
    ...r.counts,
    verdicts: r.results.map((d) => ({ correlation_id: d.correlationId, ...d.verdict })),
  };
}

/**
 * `deploy --test`: the examples of exactly the files a deploy would publish (a directory's own
 * `*.flow.md`, with their `.test.md` suites), printed as `svc test` prints them (on stderr under
 * `--json`, whose stdout is the deploy's one object). Any failure, or a file that does not
 * compile, refuses the deploy before the registry is opened.
 */
async function examplesPass(opts: DeployCommandOptions): Promise<void> {
  const { files } = listFlowFiles(opts.paths);
  const print = opts.json ? (line: string) => process.stderr.write(`${line}\n`) : (line: string) => out(line);
  const report = await testFiles(files, { libs: opts.libs }, print);
  const failing = report.failed + report.compileErrors.length;
  if (report.results.length === 0 && report.compileErrors.length === 0)
    throw new ExitError(1, 'refused: --test found no example in the files deployed; nothing was published');
  if (failing > 0)
    throw new ExitError(
      1,
      `refused: ${report.failed} example(s) failed${report.compileErrors.length > 0 ? `, ${report.compileErrors.length} compile error(s)` : ''}; nothing was published`,
    );
}

/** `file: reason`; a file with errors gets `file: N errors` and then each error as the one-file deploy prints it. */
function refusalText(r: DeployRefusal): string {
  if (!(r.error instanceof FlowPublicationError)) return `${r.file}: ${r.error.message}`;
  const n = r.error.diagnostics.length;
  return [
    `${r.file}: ${n} error${n === 1 ? '' : 's'}`,
    ...r.error.warnings.map(formatWarning),
    ...r.error.diagnostics.map(formatDiagnostic),
  ].join('\n');
}

function refusalJson(r: DeployRefusal): Record<string, unknown> {
  if (!(r.error instanceof FlowPublicationError)) return { file: r.file, message: r.error.message, code: r.error.code };
  const n = r.error.diagnostics.length;
  return {
    file: r.file,
    message: `${n} error${n === 1 ? '' : 's'}`,
    diagnostics: r.error.diagnostics,
    warnings: r.error.warnings,
  };
}

/** `svc validate`, `svc compile`, `svc deploy`: check, lower and publish `.flow.md` files. */
import { Command, Option } from 'commander';
import { writeFileSync } from 'node:fs';
import { compileFile, deployFile, validateFile, type SourceOptions } from '../app/publish.js';
import { ExitError, SvcError } from '../common/errors.js';
import { formatDiagnostic, formatWarning, FlowPublicationError, type FlowDiagnostic, type FlowWarning } from '../flow/diagnostics.js';
import { dbOption } from './options.js';

const libsOption = () => new Option('--libs <dir>', 'directory of *.lib.md step libraries for "use: <library>/<step>"');

export function registerFlowCommands(program: Command): void {
  program
    .command('validate')
    .description('parse a flow and resolve its names (fewer checks than compile); exit 0 clean or with warnings only, 1 with errors')
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
  program
    .command('deploy')
    .description('compile a flow and publish it under (tenant, flow, version), moving latest; tenant and flow come from the front matter')
    .argument('<path>', '.flow.md file')
    .requiredOption('-v, --version <version>', 'version label, unique per flow (e.g. 1.0.0)')
    .addOption(dbOption())
    .addOption(libsOption())
    .action((path: string, flags: { version: string; db: string; libs?: string }) => deploy({ path, ...flags }));
}

/** Every warning, then every error, then the count: the verdict of a refused flow. */
function verdict(diagnostics: readonly FlowDiagnostic[], warnings: readonly FlowWarning[]): string {
  const n = diagnostics.length;
  return `${[...warnings.map(formatWarning), ...diagnostics.map(formatDiagnostic)].join('\n')}\n${n} error${n === 1 ? '' : 's'}`;
}

function refuse(diagnostics: FlowDiagnostic[], warnings: FlowWarning[] = []): never {
  throw new ExitError(1, `${verdict(diagnostics, warnings)}; nothing was published`);
}

/** Warnings never fail a command: they go to stderr, beside whatever the command prints on stdout. */
function printWarnings(warnings: readonly FlowWarning[]): void {
  for (const w of warnings) process.stderr.write(`${formatWarning(w)}\n`);
}

function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof FlowPublicationError) refuse(err.diagnostics, err.warnings);
    if (err instanceof SvcError) throw new ExitError(1, `error: ${err.message}`);
    throw err;
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

export function deploy(opts: SourceOptions & { version: string; db: string }): void {
  const r = guard(() => deployFile(opts));
  printWarnings(r.warnings);
  process.stdout.write(`deployed\n  flow:    ${r.flow}\n  tenant:  ${r.tenant}\n  version: ${r.version}\n  hash:    ${r.hash}\n  db:      ${r.db}\n`);
}

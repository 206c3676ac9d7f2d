/**
 * `svc test [paths...]`: runs the examples of flow files (`## Example:` sections) and of their
 * `.test.md` suites through the real compiler and engine, with stubbed call outs and a fixed
 * clock, in this process (app/testing/suite.ts). Exit 0 when every example passes, 1 when one
 * fails (or none is found), 2 when a file does not compile.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { runSuite, TestPathError, type ExampleResult, type SuiteReport } from '../app/testing/suite.js';
import { ExitError } from '../common/errors.js';
import { EXAMPLE_DOORS } from '../serve/example-doors.js';
import { openScratchFlowState } from '../storage/index.js';
import { coverageText, junitXml, resultJson, resultText, summaryText } from './test-report.js';
import { out } from './table.js';

export function registerTest(program: Command): void {
  program
    .command('test')
    .description(
      "run the examples of flows (## Example: sections of *.flow.md and *.test.md files) through the real engine, with every call out answered by the example's stubs and now() fixed; no server, no state directory, no network. Exit 0 all passed, 1 a failure (or no example), 2 a file that does not compile",
    )
    .argument('[paths...]', 'flow files, .test.md suites and directories of them (searched through subfolders)', ['.'])
    .addOption(new Option('--libs <dir>', 'directory of *.lib.md step libraries for "use: <library>/<step>"'))
    .addOption(new Option('--filter <text>', 'only the examples whose name, flow or file contains this text'))
    .addOption(
      new Option(
        '--env <file>',
        'NAME=value lines every example starts from (SVC_CONFIG_*, SVC_SECRET_*, endpoint ${VARS}); the process environment is never read',
      ),
    )
    .addOption(new Option('--json', 'one JSON object per example, then one with the totals'))
    .addOption(new Option('--junit <file>', 'also write the results as JUnit XML to this file'))
    .addOption(
      new Option(
        '--coverage',
        'list, per flow, the steps, fault steps, rules, condition outcomes and foreach/split branches no example reached',
      ),
    )
    .action(test);
}

export interface TestOptions {
  libs?: string;
  filter?: string;
  env?: string;
  json?: boolean;
  junit?: string;
  coverage?: boolean;
}

export async function test(paths: string[], opts: TestOptions): Promise<void> {
  const report = await testFiles(paths, opts, (line) => out(line));
  if (opts.junit !== undefined) writeFileSync(opts.junit, junitXml(report));
  const code = exitCodeOf(report);
  if (code !== 0) throw new ExitError(code, '');
}

/** Runs the examples under `paths`, printing as it goes; `svc dev` and `deploy --test` call it too. */
export async function testFiles(
  paths: readonly string[],
  opts: Omit<TestOptions, 'junit'>,
  print: (line: string) => void,
  onResult: (r: ExampleResult) => void = (r) => print(opts.json ? resultJson(r) : resultText(r)),
  fileError: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<SuiteReport> {
  let report: SuiteReport;
  try {
    report = await runSuite({
      paths,
      libs: opts.libs,
      filter: opts.filter,
      env: opts.env === undefined ? undefined : readEnvFile(opts.env),
      doors: EXAMPLE_DOORS,
      flowState: openScratchFlowState,
      onResult,
    });
  } catch (err) {
    if (err instanceof TestPathError) throw new ExitError(1, `error: ${err.message}`);
    throw err;
  }
  for (const e of report.compileErrors) fileError(`${e.file}:${e.line}: ${e.step}: ${e.message}`);
  if (opts.json) {
    if (opts.coverage) for (const c of report.coverage) print(JSON.stringify({ coverage: c }));
    print(
      JSON.stringify({
        passed: report.passed,
        failed: report.failed,
        skipped: report.skipped,
        compile_errors: report.compileErrors.length,
      }),
    );
    return report;
  }
  if (opts.coverage) print(coverageText(report.coverage));
  if (report.results.length === 0 && report.compileErrors.length === 0)
    print(`no example found in ${paths.join(' ')}${opts.filter ? ` matching "${opts.filter}"` : ''}`);
  print(
    summaryText(report) + (report.compileErrors.length > 0 ? `; ${report.compileErrors.length} compile error(s)` : ''),
  );
  return report;
}

/** 2: a file does not compile; 1: an example failed, or none ran; 0: every example passed. */
export function exitCodeOf(report: SuiteReport): number {
  if (report.compileErrors.length > 0) return 2;
  if (report.failed > 0 || report.results.length === 0) return 1;
  return 0;
}

/** `NAME=value` lines; blank lines and `#` comments skipped; a line of another shape is refused, naming it. */
function readEnvFile(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ExitError(1, `error: cannot read --env ${path}: ${(err as Error).message}`);
  }
  const env: Record<string, string> = {};
  text.split(/\r?\n/).forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/.exec(t);
    if (m === null) throw new ExitError(1, `error: ${path}:${i + 1}: expected NAME=value`);
    const raw = m[2]!.trim();
    env[m[1]!] = /^(['"]).*\1$/.test(raw) ? raw.slice(1, -1) : raw;
  });
  return env;
}

/**
 * `svc test`'s use case: the flow files and suites under the given paths, compiled with every
 * check, then each example run (run-example.ts) and checked (check-example.ts) in file order, with
 * coverage kept on the side. Reads files; writes nothing; opens no socket and no state directory.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { compileFlow, type LibrarySource } from '../../flow/compile.js';
import type { FlowDiagnostic } from '../../flow/diagnostics.js';
import { pointsOf, type FlowPoint, type LoadedFlow, type ProbePoint } from '../../engine/index.js';
import { readLibraries } from '../use-cases/publish.js';
import { checkExample, type Mismatch } from './check-example.js';
import { parseExamples, type Example, type ExampleProblem } from './example-file.js';
import { runExample, type ExampleContext, type ExampleDoors, type ExampleRun } from './run-example.js';

const FLOW_SUFFIX = '.flow.md';
const SUITE_SUFFIX = '.test.md';

export interface SuiteOptions {
  /** Flow files, `.test.md` suites and directories of them (searched through their subfolders). */
  readonly paths: readonly string[];
  /** Directory of `*.lib.md` files for `use:`. */
  readonly libs?: string;
  /** Only examples whose name, flow or file contains this text (case-insensitive). */
  readonly filter?: string;
  /** Variables every example starts from (`--env <file>`). */
  readonly env?: Readonly<Record<string, string>>;
  readonly doors: ExampleDoors;
  /** A fresh flow-state store per example (ExampleContext.flowState). */
  readonly flowState?: ExampleContext['flowState'];
  /** Told of each result as it is known (the CLI prints as it goes). */
  readonly onResult?: (result: ExampleResult) => void;
}

export interface ExampleResult {
  readonly file: string;
  readonly line: number;
  /** `tenant/flow`. */
  readonly flow: string;
  readonly name: string;
  readonly verdict: 'passed' | 'failed' | 'skipped';
  readonly ms: number;
  readonly mismatches: readonly Mismatch[];
  readonly run?: ExampleRun;
  /** Why it was skipped, or why it could not run (a spec that does not read). */
  readonly note?: string;
}

export interface FlowCoverage {
  readonly flow: string;
  readonly file: string;
  readonly examples: number;
  readonly points: number;
  /** The points no example reached, in flow order. */
  readonly unreached: readonly FlowPoint[];
}

export interface SuiteReport {
  readonly results: readonly ExampleResult[];
  /** Files that do not compile (or two files naming one flow, or a suite without its flow): `svc test` exits 2. */
  readonly compileErrors: readonly FileError[];
  readonly coverage: readonly FlowCoverage[];
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
}

/** A file `svc test` cannot run, as `file:line: step: message` prints it (a compiler diagnostic is one). */
export type FileError = Pick<FlowDiagnostic, 'file' | 'line' | 'step' | 'message'>;

interface FlowFile {
  readonly file: string;
  readonly text: string;
  flow?: LoadedFlow;
}

export async function runSuite(opts: SuiteOptions): Promise<SuiteReport> {
  const { flowFiles, suites } = collect(opts.paths);
  const libs: LibrarySource[] | undefined = readLibraries(opts.libs);
  const compileErrors: FileError[] = [];
  const flows = new Map<string, LoadedFlow>();
  const byFile = new Map<string, FlowFile>();
  for (const file of flowFiles) {
    const text = readFileSync(file, 'utf8');
    const r = compileFlow(text, { file, libs });
    const entry: FlowFile = { file, text };
    byFile.set(file, entry);
    if (r.ir === undefined || r.hash === undefined) {
      compileErrors.push(...r.diagnostics);
      continue;
    }
    const key = `${r.ir.tenant}/${r.ir.flow}`;
    const other = [...byFile.values()].find((f) => f !== entry && f.flow !== undefined && keyOf(f.flow) === key);
    if (other !== undefined) {
      compileErrors.push(twice(file, key, other.file));
      continue;
    }
    entry.flow = { ir: r.ir, version: 'example', hash: r.hash, created_at: new Date(0).toISOString() };
    flows.set(key, entry.flow);
  }

  const reached = new Map<string, Set<string>>();
  const probe = (ir: LoadedFlow['ir'], step: string, point: ProbePoint) => {
    const key = `${ir.tenant}/${ir.flow}`;
    let set = reached.get(key);
    if (set === undefined) reached.set(key, (set = new Set()));
    set.add(`${step}\u0000${point}`);
  };

  const results: ExampleResult[] = [];
  const examplesOf = new Map<string, number>();
  const report = (r: ExampleResult) => {
    results.push(r);
    opts.onResult?.(r);
  };
  const filter = opts.filter?.toLowerCase();
  for (const source of [...flowFiles, ...suites]) {
    const target = source.endsWith(SUITE_SUFFIX) ? flowFileOf(source) : source;
    const text = source === target ? (byFile.get(source)?.text ?? '') : readFileSync(source, 'utf8');
    const { examples, problems } = parseExamples(text, source);
    const flow = byFile.get(target)?.flow;
    const flowName = flow === undefined ? basename(target, FLOW_SUFFIX) : keyOf(flow);
    const wanted = (name: string) =>
      filter === undefined || [name, flowName, source].some((t) => t.toLowerCase().includes(filter));
    if (examples.length > 0 && flow === undefined && !byFile.has(target))
      // A suite without its flow file (a flow that does not compile has its own errors).
      compileErrors.push({
        message: `no ${basename(target)} beside this suite: a ${SUITE_SUFFIX} file tests the ${FLOW_SUFFIX} file of the same name`,
        file: source,
        line: 1,
        step: 'suite',
      });
    // Results in file order: an example that does not read where it stands among those that run.
    const items = [...examples, ...problems].sort((a, b) => a.line - b.line);
    for (const item of items) {
      if ('message' in item) {
        if (wanted(item.example)) report(problemResult(item, flowName));
        continue;
      }
      if (flow === undefined || !wanted(item.name)) continue;
      examplesOf.set(keyOf(flow), (examplesOf.get(keyOf(flow)) ?? 0) + 1);
      report(await runOne(item, flow, flows, opts, probe));
    }
  }

  const coverage: FlowCoverage[] = [];
  for (const entry of byFile.values()) {
    if (entry.flow === undefined) continue;
    const key = keyOf(entry.flow);
    const points = pointsOf(entry.flow.ir);
    const seen = reached.get(key) ?? new Set<string>();
    coverage.push({
      flow: key,
      file: entry.file,
      examples: examplesOf.get(key) ?? 0,
      points: points.length,
      unreached: points.filter((p) => !seen.has(`${p.step}\u0000${p.point}`)),
    });
  }
  const count = (v: ExampleResult['verdict']) => results.filter((r) => r.verdict === v).length;
  return {
    results,
    compileErrors,
    coverage,
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
  };
}

async function runOne(
  example: Example,
  flow: LoadedFlow,
  flows: ReadonlyMap<string, LoadedFlow>,
  opts: SuiteOptions,
  probe: (ir: LoadedFlow['ir'], step: string, point: ProbePoint) => void,
): Promise<ExampleResult> {
  const base = { file: example.file, line: example.line, flow: keyOf(flow), name: example.name };
  if (example.spec.skip !== undefined)
    return { ...base, verdict: 'skipped', ms: 0, mismatches: [], note: example.spec.skip || undefined };
  const started = performance.now();
  const run = await runExample(flow, example.spec, {
    flows,
    doors: opts.doors,
    env: opts.env,
    probe,
    flowState: opts.flowState,
  });
  const mismatches = [...maskedPlaces(example.spec.masked), ...checkExample(example.spec.expect, run)];
  // Each later step is checked against what it did, its mismatches named by its place in `then:`.
  example.spec.then.forEach((step, i) => {
    const did = run.later?.[i];
    if (did === undefined) return;
    for (const m of checkExample(step.expect, did)) mismatches.push({ ...m, what: `then[${i}].${m.what}` });
  });
  const ms = performance.now() - started;
  return { ...base, verdict: mismatches.length === 0 ? 'passed' : 'failed', ms, mismatches, run };
}

/** A recording's masked places, each a mismatch until filled in (and `masked:` removed). */
function maskedPlaces(places: readonly string[]): Mismatch[] {
  return places.map((at) => ({
    what: `masked.${at}`,
    expected: 'the real value, filled in (then remove masked:)',
    actual: 'the log masked it when it was recorded',
  }));
}

function problemResult(p: ExampleProblem, flow: string): ExampleResult {
  return {
    file: p.file,
    line: p.line,
    flow,
    name: p.example,
    verdict: 'failed',
    ms: 0,
    mismatches: [],
    note: `${p.file}:${p.line}: ${p.message}`,
  };
}

function keyOf(flow: LoadedFlow): string {
  return `${flow.ir.tenant}/${flow.ir.flow}`;
}

function twice(file: string, key: string, first: string): FileError {
  return {
    message: `flow ${key} is also defined by ${first}; each flow is tested from one file`,
    file,
    line: 1,
    step: 'front matter',
  };
}

function flowFileOf(suite: string): string {
  return join(dirname(suite), `${basename(suite, SUITE_SUFFIX)}${FLOW_SUFFIX}`);
}

/** The flow files and suites under `paths`, each once, in a stable order; a suite's flow file comes with it. */
function collect(paths: readonly string[]): { flowFiles: string[]; suites: string[] } {
  const flowFiles = new Set<string>();
  const suites = new Set<string>();
  const visit = (path: string, given: boolean): void => {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      if (given) throw new TestPathError(`${path}: no such file or directory`);
      return;
    }
    if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) {
        if (name.startsWith('.') || name === 'node_modules') continue;
        visit(join(path, name), false);
      }
      return;
    }
    if (path.endsWith(FLOW_SUFFIX)) {
      flowFiles.add(path);
      const suite = join(dirname(path), `${basename(path, FLOW_SUFFIX)}${SUITE_SUFFIX}`);
      if (given && existsSync(suite)) suites.add(suite);
    } else if (path.endsWith(SUITE_SUFFIX)) {
      suites.add(path);
      const flow = flowFileOf(path);
      if (existsSync(flow)) flowFiles.add(flow);
    } else if (given) throw new TestPathError(`${path}: not a ${FLOW_SUFFIX} flow or a ${SUITE_SUFFIX} suite`);
  };
  for (const p of paths) visit(p, true);
  return { flowFiles: [...flowFiles], suites: [...suites] };
}

/** A path given to `svc test` that is neither there nor a flow, suite or directory. */
export class TestPathError extends Error {
  override readonly name = 'TestPathError';
}

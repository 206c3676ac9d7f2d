/**
 * `npm run bench:scale`: how the service's costs grow with the size of an installation (issue 22).
 * Each part seeds one dimension at several sizes (flows deployed, API keys, queue backlog, event-log
 * rows, audit entries), measures real `svc` child processes on loopback, and returns a section;
 * every figure is printed at each size with its ratio to the smallest size measured in the same run.
 *
 *   npm run bench:scale -- [--quick] [--only flows,keys,queue,logs,audit] [--markdown <file>]
 *
 * --quick     the smallest sizes and short rounds: a smoke run (flows and keys: about 50 s)
 * --only      the parts to run, comma-separated (default: all, in that order)
 * --markdown  also write the tables as Markdown to <file> (docs/performance.md's "Scale" section)
 *
 * Time: flows and keys together take about 6 minutes on a shared 2-vCPU VM (flows about 2.5,
 * keys about 3.5; --quick about 50 s); see docs/performance.md for the other parts. Progress goes to stderr, the tables
 * to stdout. Each part gets its own scratch directory under the system's temporary directory
 * (TMPDIR), removed afterwards, also when the part fails; a part that fails is reported as
 * `failed: <message>` and the run goes on with the next (the exit status is then 1).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchAuditScale } from './audit.js';
import { benchFlowScale } from './flows.js';
import { benchKeyScale } from './keys.js';
import { benchLogScale } from './logs.js';
import { benchQueueScale } from './queue.js';
import { markdownTables, textTables, type PartOutcome } from './table.js';
import type { ScalePart } from './types.js';

const SVC_BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/main.js');

/** Every part, in the order a full run takes them. */
const PARTS: ReadonlyMap<string, ScalePart> = new Map([
  ['flows', benchFlowScale],
  ['keys', benchKeyScale],
  ['queue', benchQueueScale],
  ['logs', benchLogScale],
  ['audit', benchAuditScale],
]);

interface RunOptions {
  readonly quick: boolean;
  readonly parts: readonly string[];
  readonly markdown?: string;
}

function parseOptions(argv: readonly string[]): RunOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, markdown: { type: 'string' } },
    strict: true,
  });
  const parts =
    values.only === undefined
      ? [...PARTS.keys()]
      : [
          ...new Set(
            values.only
              .split(',')
              .map((p) => p.trim())
              .filter((p) => p !== ''),
          ),
        ];
  const unknown = parts.filter((p) => !PARTS.has(p));
  if (unknown.length > 0 || parts.length === 0) {
    throw new Error(
      `--only takes part names from ${[...PARTS.keys()].join(', ')}; got ${unknown.length > 0 ? unknown.join(', ') : 'none'}`,
    );
  }
  return { quick: values.quick, parts, markdown: values.markdown };
}

async function runPart(name: string, part: ScalePart, quick: boolean): Promise<PartOutcome> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const progress = (line: string) => process.stderr.write(`[${name} ${seconds().toFixed(1).padStart(6)} s] ${line}\n`);
  const workDir = mkdtempSync(join(tmpdir(), `svc-scale-${name}-`));
  progress(`scratch directory ${workDir}`);
  try {
    const section = await part({ svcBin: SVC_BIN, workDir, quick, progress });
    progress('done');
    return { part: name, section, seconds: seconds() };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    progress(`failed: ${err instanceof Error ? (err.stack ?? message) : message}`);
    return { part: name, error: message, seconds: seconds() };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  let opts: RunOptions;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(
      `${(err as Error).message}\nusage: bench:scale [--quick] [--only ${[...PARTS.keys()].join(',')}] [--markdown <file>]\n`,
    );
    process.exitCode = 2;
    return;
  }
  const started = performance.now();
  const outcomes: PartOutcome[] = [];
  for (const name of opts.parts) outcomes.push(await runPart(name, PARTS.get(name)!, opts.quick));
  const total = (performance.now() - started) / 1000;
  process.stdout.write(`${textTables(outcomes)}whole run: ${total.toFixed(0)} s${opts.quick ? ' (--quick)' : ''}\n`);
  if (opts.markdown !== undefined) writeFileSync(opts.markdown, markdownTables(outcomes));
  if (outcomes.some((o) => 'error' in o)) process.exitCode = 1;
}

await main();

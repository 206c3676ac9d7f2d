/**
 * `npm run bench:deploy-many`: what publishing many flows costs, one `svc deploy <dir>` process
 * against one process per file. `--flows` copies of the /run benchmarks' quote flow (each under its
 * own name) are deployed by one process (`--rounds` times, each under a new version, the median
 * printed); then `--sample` of them are deployed one process each, and that time is extrapolated to
 * every flow (a full run of one process per file would take minutes on a shared machine).
 *
 *   npm run bench:deploy-many -- [--flows 400] [--sample 20] [--rounds 3]
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { QUOTE_FLOW } from './quote-flow.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');

/** Writes `count` quote flows named quote-00001 ... into `dir`; returns their paths. */
export function writeQuoteFlows(dir: string, count: number): string[] {
  mkdirSync(dir, { recursive: true });
  return Array.from({ length: count }, (_, i) => {
    const name = `quote-${String(i + 1).padStart(5, '0')}`;
    const file = join(dir, `${name}.flow.md`);
    writeFileSync(file, QUOTE_FLOW.replace(/^flow: quote$/m, `flow: ${name}`));
    return file;
  });
}

/** Runs `svc <args>` to completion and returns its wall-clock time in ms; throws when it fails. */
export function timeSvcMs(args: readonly string[], env: NodeJS.ProcessEnv): number {
  const start = process.hrtime.bigint();
  execFileSync(process.execPath, [SVC, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function main(): void {
  const { values } = parseArgs({
    options: {
      flows: { type: 'string', default: '400' },
      sample: { type: 'string', default: '20' },
      rounds: { type: 'string', default: '3' },
    },
  });
  const flows = Number(values.flows);
  const sample = Math.min(Number(values.sample), flows);
  const rounds = Number(values.rounds);
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-deploy-'));
  const env = { ...process.env, HOME: work, RUST_LOG: 'warn' };
  try {
    const db = join(work, 'state', 'registry.db');
    execFileSync(process.execPath, [SVC, 'tenant', 'create', '--id', 'bench', '--display-name', 'bench', '--db', db], {
      env,
      stdio: 'ignore',
    });
    const dir = join(work, 'flows');
    const files = writeQuoteFlows(dir, flows);

    const batchMs = Array.from({ length: rounds }, (_, r) =>
      timeSvcMs(['deploy', dir, '-v', `batch-${r + 1}`, '--db', db], env),
    );
    const singleMs = files.slice(0, sample).map((f) => timeSvcMs(['deploy', f, '-v', 'single', '--db', db], env));

    const check = new Database(db, { readonly: true });
    const published = (
      check.prepare("SELECT count(*) AS n FROM flow_versions WHERE version LIKE 'batch-%'").get() as { n: number }
    ).n;
    check.close();
    if (published !== flows * rounds) throw new Error(`expected ${flows * rounds} batch versions, found ${published}`);

    const batch = median(batchMs);
    const perProcess = singleMs.reduce((a, b) => a + b, 0) / singleMs.length;
    const extrapolated = perProcess * flows;
    const rows = [
      [
        'one `svc deploy <dir>` process',
        `${flows} flows`,
        `${(batch / 1000).toFixed(2)} s`,
        `median of ${rounds}: ${batchMs.map((x) => (x / 1000).toFixed(2)).join(', ')} s`,
      ],
      [
        'one process per file',
        `${sample} measured`,
        `${(extrapolated / 1000).toFixed(1)} s for ${flows}`,
        `${perProcess.toFixed(0)} ms per process (median ${median(singleMs).toFixed(0)} ms)`,
      ],
    ];
    process.stdout.write(
      `| How | Flows | Time | Detail |\n|---|---|---|---|\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}\n`,
    );
    process.stdout.write(
      `one process per file / one process for the directory: ${(extrapolated / batch).toFixed(1)}x\n`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();

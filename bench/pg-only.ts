/**
 * `npm run bench:pg -- --store postgres://...`: only the PostgreSQL part of `npm run bench`
 * (bench/pg.ts: /run against SQLite, /enqueue against pg-boss send, 1 to 3 nodes), for when the
 * SQLite figures of the same sitting are not needed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchPg } from './pg.js';

const { values: flags } = parseArgs({ options: { store: { type: 'string' } } });
const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');

if (flags.store === undefined) {
  process.stderr.write('usage: npm run bench:pg -- --store postgres://user@host:port/db\n');
  process.exit(2);
}
const home = mkdtempSync(join(tmpdir(), 'svc-bench-pg-'));
try {
  await benchPg({
    svcBin: SVC,
    env: { ...process.env, HOME: home, RUST_LOG: 'warn' },
    workDir: join(home, 'pg'),
    storeUrl: flags.store,
    durationSec: Number(process.env.BENCH_SECONDS ?? 12),
  });
} finally {
  rmSync(home, { recursive: true, force: true });
}

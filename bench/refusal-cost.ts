/**
 * `npm run bench:refusals`: what a refused request costs the disk. For each kind of refusal a
 * hostile or broken client can repeat (an unknown key: 401; a known key over its rate limit: 429;
 * a known key without the flow's scope: 403), a fresh server takes `--count` identical refused
 * requests, is stopped cleanly, and the growth of the audit database, the log database and the
 * daily JSON Lines files is divided by the count. Rows written are counted too.
 *
 *   npm run bench:refusals -- [--count 20000]
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statePaths } from '../src/common/paths.js';
import { spawnListening } from './load.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');

const FLOW = `---
flowdoc_version: "0.1"
flow: guarded
tenant: bench
required_scope: orders
---

## Step: answer
\`\`\`ntd
{"ok": true}
\`\`\`
`;

interface Kind {
  readonly label: string;
  readonly status: number;
  /** The Authorization value, from the keys made for this sandbox (none: the header is left out). */
  authorization(keys: { plain: string; limited: string }): string | undefined;
  /** A new tenant and flow name in the path of every request (what a hostile caller chooses). */
  readonly varyPath?: boolean;
}

const KINDS: readonly Kind[] = [
  { label: 'unknown key (401)', status: 401, authorization: () => `Bearer svk_${'0'.repeat(32)}` },
  { label: 'over its rate limit (429)', status: 429, authorization: (k) => `Bearer ${k.limited}` },
  { label: 'without the scope (403)', status: 403, authorization: (k) => `Bearer ${k.plain}` },
  { label: 'no key, new names each (401)', status: 401, authorization: () => undefined, varyPath: true },
];

function svc(env: NodeJS.ProcessEnv, args: string[]): string {
  return execFileSync(process.execPath, [SVC, ...args], { env, encoding: 'utf8' });
}

function keyOf(out: string): string {
  const key = /svk_[0-9a-f]{32}/.exec(out)?.[0];
  if (!key) throw new Error(`no key in: ${out}`);
  return key;
}

/** Bytes of the audit and log databases (with their WAL files) and of the JSON Lines files. */
function stateBytes(db: string): number {
  const p = statePaths(db);
  let total = 0;
  for (const base of [p.auditDb, p.logDb]) {
    for (const f of [base, `${base}-wal`, `${base}-shm`]) total += statSync(f, { throwIfNoEntry: false })?.size ?? 0;
  }
  for (const f of readdirSync(p.logsDir, { withFileTypes: true }))
    if (f.isFile()) total += statSync(join(p.logsDir, f.name)).size;
  return total;
}

function rowCounts(db: string): { audit: number; log: number } {
  const p = statePaths(db);
  const count = (file: string, table: string): number => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  return { audit: count(p.auditDb, 'audit_entries'), log: count(p.logDb, 'events') };
}

async function measure(kind: Kind, count: number): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-refusals-'));
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  try {
    svc(env, ['tenant', 'create', '--id', 'bench', '--display-name', 'Bench', '--db', db]);
    const keys = {
      plain: keyOf(
        svc(env, ['keys', 'create', '--tenant', 'bench', '--label', 'plain', '--scopes', 'billing', '--db', db]),
      ),
      limited: keyOf(
        svc(env, [
          'keys',
          'create',
          '--tenant',
          'bench',
          '--label',
          'limited',
          '--scopes',
          'orders',
          '--rate-limit',
          '1',
          '--db',
          db,
        ]),
      ),
    };
    const flowPath = join(home, 'guarded.flow.md');
    writeFileSync(flowPath, FLOW);
    svc(env, ['deploy', flowPath, '-v', '1.0.0', '--db', db]);
    const serve = ['serve', '--host', '127.0.0.1', '--port', '0', '--db', db];
    // A first start and stop creates every file, so only the refusals' growth is measured.
    await (await spawnListening(process.execPath, [SVC, ...serve], env)).stop();
    const before = { bytes: stateBytes(db), rows: rowCounts(db) };
    const server = await spawnListening(process.execPath, [SVC, ...serve], env);
    let statuses: Record<string, number> = {};
    try {
      const authorization = kind.authorization(keys);
      let n = 0;
      const result = await autocannon({
        url: `${server.url}/flows/bench/guarded/run`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
        body: '{"n":1}',
        connections: 16,
        amount: count,
        ...(kind.varyPath
          ? {
              requests: [
                {
                  setupRequest: (req: autocannon.Request) => ({
                    ...req,
                    path: `/flows/t${n % 97}/flow-${n++}/run`,
                  }),
                },
              ],
            }
          : {}),
      });
      statuses = Object.fromEntries(
        Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]),
      );
    } finally {
      await server.stop();
    }
    const after = { bytes: stateBytes(db), rows: rowCounts(db) };
    // A refusal may close the connection; what counts is the requests answered.
    const answered = Object.values(statuses).reduce((a, n) => a + n, 0);
    const refused = statuses[String(kind.status)] ?? 0;
    const perRequest = (after.bytes - before.bytes) / Math.max(1, answered);
    process.stdout.write(
      `${kind.label.padEnd(28)} ${String(answered).padStart(6)} answered ${JSON.stringify(statuses)}   ` +
        `${perRequest.toFixed(1).padStart(7)} bytes/request   audit rows +${after.rows.audit - before.rows.audit}   log rows +${after.rows.log - before.rows.log}\n`,
    );
    if (refused < answered * 0.9) process.stdout.write(`  (only ${refused} of ${answered} answered ${kind.status})\n`);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--count');
  const count = at > 0 ? Number(process.argv[at + 1]) : 20_000;
  if (!Number.isSafeInteger(count) || count < 1) throw new Error('--count takes a positive integer');
  for (const kind of KINDS) await measure(kind, count);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});

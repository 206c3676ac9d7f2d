/**
 * `npm run bench:ui`: how fast the management UI's pages answer on a large installation: 10,000
 * flow versions (1,000 flows of 10 versions), 1,000,000 log rows and a day of rollups in which
 * every flow ran every minute (2.9 million rows: the charts and live numbers). Seeds a temporary state
 * directory, starts `svc serve`, logs in over HTTP and times each page: its first view after the
 * start, then the median and worst of the next 10.
 * Loopback only. Seeding takes a few minutes; with SVC_BENCH_UI_STATE=<dir> the seeded state
 * directory is kept in <dir>, and a later run with the same <dir> reuses it (the log rows replaced,
 * the rollups brought up to the minute: a few seconds).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statePaths } from '../src/common/paths.js';
import { compileFlow } from '../src/flow/compile.js';
import { SqliteArtifactsStore } from '../src/store/sqlite/sqlite-artifacts-store.js';
import { openDb } from '../src/store/sqlite/db.js';
import { SqliteEventLogStore } from '../src/store/sqlite/sqlite-event-log-store.js';
import type { EventRow } from '../src/store/event-log/event-log-row.js';
import type { RollupRow } from '../src/store/contracts/index.js';
import { logMigrations } from '../src/store/sqlite/migrations/log.js';
import { registryMigrations } from '../src/store/sqlite/migrations/registry.js';
import { SqliteTenantsStore } from '../src/store/sqlite/sqlite-tenants-store.js';

const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');
const FLOWS = 1000;
const VERSIONS = 10;
const LOG_ROWS = 1_000_000;
/** Minutes of rollups seeded: a whole day, every flow every minute. */
const ROLLUP_MINUTES = 1440;
/** Queues with a sample every minute of the day. */
const QUEUES = 50;
const PASSWORD = 'correct horse battery staple';

function seedRegistry(db: string): void {
  const registry = openDb(db, registryMigrations);
  new SqliteTenantsStore(registry).create({
    id: 'big',
    displayName: 'Big',
    authMethods: ['api_key'],
    createdAt: '2026-01-01T00:00:00Z',
  });
  const artifacts = new SqliteArtifactsStore(registry);
  registry.transaction(() => {
    for (let f = 0; f < FLOWS; f++) {
      for (let v = 1; v <= VERSIONS; v++) {
        const compiled = compileFlow(
          `---\nflowdoc_version: "0.1"\nflow: flow-${f}\ntenant: big\n---\n## Step: answer\n\`\`\`ntd\n{"v": ${v}}\n\`\`\`\n`,
        );
        artifacts.publish({
          tenant: 'big',
          name: `flow-${f}`,
          version: String(v),
          bytes: compiled.bytes!,
          hash: compiled.hash!,
          createdAt: '2026-01-01T00:00:00Z',
        });
      }
    }
  })();
  registry.close();
}

/** LOG_ROWS rows, 10 ms apart, the newest now (a reused state directory's rows are replaced). */
function seedEvents(log: SqliteEventLogStore, db: string): void {
  const raw = openDb(statePaths(db).logDb, logMigrations);
  // event_counts (log migration 8) and correlation_blooms (9) with them: the store keeps those with
  // its own deletes, not with this one.
  raw.exec('DELETE FROM events; DELETE FROM event_counts; DELETE FROM correlation_blooms;');
  raw.close();
  const start = Date.now() - LOG_ROWS * 10;
  const batch: EventRow[] = [];
  for (let i = 0; i < LOG_ROWS; i++) {
    const ts = new Date(start + i * 10).toISOString().slice(0, 19) + 'Z';
    batch.push({
      ts,
      correlation_id: `c-${i >> 1}`,
      tenant: 'big',
      flow: `flow-${i % FLOWS}`,
      step: null,
      event: i % 2 === 0 ? 'received' : 'completed',
      payload: null,
      payload_truncated: 0,
      http_status: i % 2 === 0 ? null : 200,
      outcome: null,
      reason: null,
    });
    if (batch.length === 10_000) log.insertMany(batch.splice(0));
  }
}

/**
 * The rollups of the minutes `from` to `to` (inclusive) of a day in which every flow ran every
 * minute (the charts' and live numbers' worst case): a delivery row and a step row per flow and
 * minute, and the all-flows row of each minute; and 50 queues' samples. Added as the event writer
 * adds them (addAggregates, a minute a call).
 */
function seedRollups(log: SqliteEventLogStore, from: number, to: number): void {
  const buckets = (n: number) => [0, 0, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  for (let m = from; m <= to; m++) {
    const rows: RollupRow[] = [
      {
        minute: m,
        tenant: '',
        flow: '',
        door: 'http',
        step: '',
        count: FLOWS * 3,
        failures: FLOWS,
        sumMs: FLOWS * 21,
        buckets: buckets(FLOWS * 3),
      },
    ];
    for (let f = 0; f < FLOWS; f++) {
      const flow = `flow-${f}`;
      rows.push(
        {
          minute: m,
          tenant: 'big',
          flow,
          door: 'http',
          step: '',
          count: 3,
          failures: 1,
          sumMs: 21,
          buckets: buckets(3),
        },
        {
          minute: m,
          tenant: 'big',
          flow,
          door: '',
          step: 'answer',
          count: 3,
          failures: 1,
          sumMs: 6,
          buckets: buckets(3),
        },
      );
    }
    log.addAggregates({
      rollups: rows,
      queueSamples: Array.from({ length: QUEUES }, (_, q) => ({
        minute: m,
        tenant: 'big',
        flow: `flow-${q}`,
        backlog: q,
        retries: 0,
        processed: m,
        dead: 1,
      })),
    });
  }
}

/**
 * Seeds the state directory of `db`. With `reuse` (a directory seeded by an earlier run, its last
 * rollup minute), keeps the registry, replaces the log rows (so the last hour holds as many as on a
 * fresh seed) and brings the day of rollups up to now: the minutes since the earlier run are added,
 * and those older than a day deleted as retention deletes them.
 */
function seed(db: string, reuse: number | undefined): number {
  const now = Math.floor(Date.now() / 60_000);
  const first = now - ROLLUP_MINUTES + 1;
  if (reuse === undefined) seedRegistry(db);
  const log = SqliteEventLogStore.open(statePaths(db).logDb);
  seedEvents(log, db);
  if (reuse === undefined || reuse < first) {
    if (reuse !== undefined) log.deleteRollupsBefore(now + 1);
    seedRollups(log, first, now);
  } else {
    log.deleteRollupsBefore(first);
    seedRollups(log, reuse + 1, now);
  }
  log.close();
  return now;
}

async function main(): Promise<void> {
  // SVC_BENCH_UI_STATE=<dir>: seed into <dir> and keep it; a later run with the same <dir> reuses
  // it (seconds instead of minutes: see seed). Without it, a temporary directory, removed after.
  const kept = process.env.SVC_BENCH_UI_STATE;
  const home = kept === undefined || kept === '' ? mkdtempSync(join(tmpdir(), 'svc-bench-ui-')) : resolve(kept);
  const db = join(home, 'state', 'registry.db');
  const marker = join(home, 'bench-ui-seeded.json');
  const reuse = existsSync(marker)
    ? (JSON.parse(readFileSync(marker, 'utf8')) as { lastMinute: number }).lastMinute
    : undefined;
  const seedStarted = Date.now();
  const lastMinute = seed(db, reuse);
  if (kept !== undefined && kept !== '') writeFileSync(marker, JSON.stringify({ lastMinute }));
  process.stdout.write(
    `${reuse === undefined ? 'seeded' : `brought ${home} up to date:`} ${FLOWS * VERSIONS} flow versions, ${LOG_ROWS} log rows and ${ROLLUP_MINUTES * (2 * FLOWS + 1)} rollup rows (a day, every flow every minute) in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s\n`,
  );
  const child = spawn(process.execPath, [SVC, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db], {
    env: { ...process.env, HOME: home, RUST_LOG: 'warn', SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: PASSWORD },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((res, rej) => {
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) res(m[1]!);
      });
      child.once('exit', () => rej(new Error(`server exited:\n${out}`)));
    });
    let cookies = '';
    const remember = (res: Response) => {
      for (const c of res.headers.getSetCookie()) cookies = `${cookies ? `${cookies}; ` : ''}${c.split(';', 1)[0]}`;
    };
    const loginPage = await fetch(`${url}/ui/login`);
    remember(loginPage);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await loginPage.text())![1]!;
    const login = await fetch(`${url}/ui/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookies, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, username: 'admin', password: PASSWORD }),
    });
    if (login.status !== 303) throw new Error(`login answered ${login.status}`);
    remember(login);
    const pages = [
      '/ui',
      '/ui/registry',
      '/ui/registry/big/flow-500',
      '/ui/registry/big/flow-500?window=24h',
      '/ui/executions',
      '/ui/executions?view=rows',
      '/ui/executions?flow=flow-7',
      '/ui/executions?correlation_id=c-123456',
      '/ui/executions/c-499999',
      '/ui/queues',
      '/ui/queues?tenant=big&flow=flow-7',
      '/ui/audit',
      '/ui/settings',
    ];
    // A page's first view after the server starts also prepares its statements and warms the
    // caches it reads: shown on its own, then the median and worst of the next 10.
    process.stdout.write('page                                         first ms   median ms   worst ms   bytes\n');
    for (const page of pages) {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < 11; i++) {
        const t0 = performance.now();
        const res = await fetch(`${url}${page}`, { headers: { cookie: cookies } });
        bytes = (await res.arrayBuffer()).byteLength;
        if (res.status !== 200) throw new Error(`${page} answered ${res.status}`);
        times.push(performance.now() - t0);
      }
      const first = times.shift()!;
      times.sort((a, b) => a - b);
      process.stdout.write(
        `${page.padEnd(45)}${first.toFixed(1).padStart(8)}${times[5]!.toFixed(1).padStart(12)}${times[9]!.toFixed(1).padStart(11)}${String(bytes).padStart(8)}\n`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    if (kept === undefined || kept === '') rmSync(home, { recursive: true, force: true });
  }
}

await main();

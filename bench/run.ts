/**
 * `npm run bench`: the service's /run against a bare node:http server, measured in the same run on
 * the same machine; prints both req/s, both p99s and the ratio (target: >= 0.5 at log_level event_only).
 * The same flow with payload tracing on is measured in the same alternating rounds, as a ratio of
 * tracing off (what turning tracing on costs a flow). Then /run with `--metrics` against without,
 * and with the rollups against `--no-rollups` (issue 39's bound), each on pairs of servers of their
 * own (flag-ratio.ts).
 * Then `svc test` over 100 flows of 10 examples each, wall time of one process (svc-test.ts), and
 * `svc replay` of 10,000 traced deliveries, wall time of one process (replay.ts).
 * With `-- --store postgres://...`, then the PostgreSQL store against SQLite and pg-boss (pg.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { deployFlow, seedBenchState, svcCli } from './bench-state.js';
import { benchEnqueue } from './enqueue.js';
import { benchFlagRatio, flagRatioLine, METRICS_SWITCH, ROLLUPS_SWITCH } from './flag-ratio.js';
import { BARE_SERVER_SOURCE, combine, load, printTable, spawnListening, type LoadResult } from './load.js';
import { benchPg } from './pg.js';
import { benchReplay, reportReplay } from './replay.js';
import { benchSvcTest, reportSvcTest } from './svc-test.js';
import { QUOTE_FLOW as FLOW } from './quote-flow.js';
import { ratioOf, targetLines } from './targets.js';

const { values: flags } = parseArgs({ options: { store: { type: 'string' } } });
const SVC = resolve(dirname(fileURLToPath(import.meta.url)), '../src/main.js');
const DURATION = Number(process.env.BENCH_SECONDS ?? 12);
const ROUNDS = 4;
/** Pause after each traced round, so its log writer backlog does not fall on the next rounds. */
const SETTLE_MS = 1500;

async function main(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const children: { stop(): Promise<void> }[] = [];
  try {
    const key = seedBenchState(SVC, env, db);
    deployFlow(SVC, env, db, 'quote-traced.flow.md', FLOW.replace('flow: quote', 'flow: quote-traced'));
    svcCli(SVC, env, ['trace', 'enable', '--tenant', 'bench', '--flow', 'quote-traced', '--db', db]);

    const body = JSON.stringify({ id: 'o-1', total: 42 });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const rows: LoadResult[] = [];

    // Both servers run side by side and are measured in alternating rounds, so that load from
    // anything else on this shared machine falls on both alike.
    const bare = await spawnListening(process.execPath, ['-e', BARE_SERVER_SOURCE]);
    children.push(bare);
    const server = await spawnListening(
      process.execPath,
      [SVC, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db],
      env,
    );
    children.push(server);
    const runUrl = `${server.url}/flows/bench/quote/run`;
    const tracedUrl = `${server.url}/flows/bench/quote-traced/run`;
    await load('warm-up', { url: bare.url, body, headers, durationSec: 1 });
    await load('warm-up', { url: runUrl, body, headers, durationSec: 2 });
    await load('warm-up', { url: tracedUrl, body, headers, durationSec: 1 });
    const bareRounds: LoadResult[] = [];
    const runRounds: LoadResult[] = [];
    const tracedRounds: LoadResult[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bareRounds.push(await load('bare node:http', { url: bare.url, body, headers, durationSec: DURATION / ROUNDS }));
      // Each service round leaves its log writer thread a backlog that would load the next round on
      // two cores, so every one is followed by the same settle: no round inherits another's.
      runRounds.push(
        await load('svc /run (validate + ntd)', { url: runUrl, body, headers, durationSec: DURATION / ROUNDS }),
      );
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      tracedRounds.push(
        await load('svc /run, tracing on', { url: tracedUrl, body, headers, durationSec: DURATION / ROUNDS }),
      );
      // A traced round leaves the log writer thread a backlog of full-payload rows; on two cores it
      // would load the next round of the other two (measured: /run 3-4% lower), so let it drain.
      await new Promise((r) => setTimeout(r, SETTLE_MS));
    }
    rows.push(combine(bareRounds), combine(runRounds), combine(tracedRounds));
    const run = rows[1]!;
    const traced = rows[2]!;
    await server.stop();
    // What counting costs the request path: its own pair of servers, differing only by --metrics.
    const pairOpts = { svcBin: SVC, env, db, headers, body };
    const metrics = await benchFlagRatio(METRICS_SWITCH, pairOpts);
    rows.push(combine(metrics.off), combine(metrics.on));
    // What the UI's per-minute rollups cost the request path (issue 39: within 3%), the same way.
    const rollups = await benchFlagRatio(ROLLUPS_SWITCH, pairOpts);
    rows.push(combine(rollups.off), combine(rollups.on));

    printTable(rows);
    const ratio = run.reqPerSec / rows[0]!.reqPerSec;
    process.stdout.write(`ratio /run vs bare: ${ratio.toFixed(2)} (target >= 0.50)\n`);
    process.stdout.write(
      `ratio /run tracing on vs tracing off: ${(traced.reqPerSec / run.reqPerSec).toFixed(2)} (3 step_traced rows per request, written by the batching log writer)\n`,
    );
    process.stdout.write(flagRatioLine(METRICS_SWITCH, metrics));
    process.stdout.write(flagRatioLine(ROLLUPS_SWITCH, rollups));
    if (rows.some((r) => r.non2xx > 0 || r.errors > 0))
      process.stdout.write('WARNING: /run answered non-2xx or errored during the run\n');
    process.stdout.write(
      targetLines([
        {
          what: 'issue 39: /run rollups on / rollups off',
          value: rollups.medianRatio,
          target: 0.97,
          direction: 'at least',
        },
        { what: 'issue 40: /run / bare node:http', value: ratio, target: 0.8, direction: 'at least' },
        {
          what: 'issue 40: /run p99 / bare p99 (autocannon: whole ms)',
          value: ratioOf(run.p99Ms, rows[0]!.p99Ms),
          target: 2,
          direction: 'at most',
          unit: 'x',
        },
      ]),
    );
    await benchEnqueue({ svcBin: SVC, env, db, key, bareUrl: bare.url, durationSec: DURATION });
    await bare.stop();
    process.stdout.write(reportSvcTest(benchSvcTest()));
    process.stdout.write(reportReplay(await benchReplay()));
    process.stdout.write(
      'issue 40 targets against the peers (BullMQ, Node-RED, pg-boss): npm run bench:peers, which runs them beside the service\n',
    );
    if (flags.store !== undefined)
      await benchPg({ svcBin: SVC, env, workDir: join(home, 'pg'), storeUrl: flags.store, durationSec: DURATION });
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  }
}

await main();

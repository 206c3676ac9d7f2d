/**
 * PostgreSQL part of `npm run bench -- --store postgres://...` (issue 23), in a schema of its own
 * (`svc_bench_<pid>`, dropped at the end). A state directory is seeded through the CLI and copied to
 * the store with `svc store migrate`; then:
 * 1. /run on a server on the store against a server on the state directory, side by side in
 *    alternating rounds (target: PostgreSQL >= 0.8 of SQLite);
 * 2. durable /enqueue on the store against pg-boss `send` over the same database, alternating
 *    rounds at the same concurrency (target: >= 3x);
 * 3. /run and /enqueue over 1, 2 and 3 servers on the same store, the load spread over them (one
 *    autocannon per server, run together, summed).
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { deployFlow, seedBenchState, svcCli } from './bench-state.js';
import { advisoryLockKey } from '../src/queue/coordination/node-lease.js';
import { queueLockName } from '../src/queue/pg/pg-queue-consumer.js';
import { SINK } from './enqueue.js';
import { combine, load, printTable, spawnListening, type Child, type LoadResult } from './load.js';
import { parseStoreUrl } from '../src/store/pg/store-url.js';
import { startBossSender } from './pg-boss-send.js';

export interface PgBenchOptions {
  /** dist/src/main.js */
  readonly svcBin: string;
  /** Environment with HOME of the bench sandbox. */
  readonly env: NodeJS.ProcessEnv;
  /** A directory of the sandbox for this part's state directories (created). */
  readonly workDir: string;
  /** The database, as given after `--store`; a `schema` parameter of its own is set on it. */
  readonly storeUrl: string;
  /** Seconds of each measurement, spread over its rounds. @default 12 */
  readonly durationSec?: number;
}

const ROUNDS = 4;
/** Connections of the /run rounds, as in the SQLite part; spread over the servers in part 3. */
const RUN_CONNECTIONS = 32;
/** Connections of the /enqueue rounds and sends in flight of pg-boss, as in the SQLite part. */
const ENQUEUE_CONNECTIONS = 128;
const MAX_NODES = 3;
const TARGET_RUN_RATIO = 0.8;
/** Issue 40: PostgreSQL /enqueue at least 4x pg-boss `send` in the same run (issue 23 asked 3x). */
const TARGET_ENQUEUE_RATIO = 4;

interface Target {
  readonly label: string;
  readonly value: number;
  /** Undefined: a figure shown beside the targets, with none of its own. */
  readonly target: number | undefined;
}

export async function benchPg(o: PgBenchOptions): Promise<void> {
  const duration = o.durationSec ?? 12;
  const svcSchema = `svc_bench_${process.pid}`;
  const bossSchema = `pgboss_bench_${process.pid}`;
  const database = parseStoreUrl(o.storeUrl).connectionString;
  const storeUrl = new URL(database);
  storeUrl.searchParams.set('schema', svcSchema);
  const stateDb = join(o.workDir, 'state', 'registry.db');
  const key = seedBenchState(o.svcBin, o.env, stateDb);
  deployFlow(o.svcBin, o.env, stateDb, 'sink.flow.md', SINK);
  // The same flow under one queue per round of part 2, whose worker the bench holds back (see there).
  for (let round = 0; round < ROUNDS; round++)
    deployFlow(o.svcBin, o.env, stateDb, `held${round}.flow.md`, SINK.replace('flow: sink', `flow: held${round}`));
  const admin = new pg.Client({ connectionString: database });
  await admin.connect();
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const body = JSON.stringify({ id: 'o-1', total: 42 });
  const children: Child[] = [];
  const rows: LoadResult[] = [];
  const targets: Target[] = [];
  const perNodes: { nodes: number; run: LoadResult; enqueue: LoadResult }[] = [];
  /** The largest backlog an /enqueue round left to the workers, of part 2 and of part 3. */
  const worst: Drained[] = [];
  try {
    svcCli(o.svcBin, o.env, ['store', 'migrate', '--from', join(o.workDir, 'state'), '--to', storeUrl.toString()]);
    const startNode = async (): Promise<Child> => {
      const child = await spawnListening(
        process.execPath,
        [o.svcBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--store', storeUrl.toString()],
        o.env,
      );
      children.push(child);
      return child;
    };

    // 1. /run, both servers side by side in alternating rounds.
    const sqlite = await spawnListening(
      process.execPath,
      [o.svcBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', stateDb],
      o.env,
    );
    const node1 = await startNode().catch(async (err: unknown) => {
      await sqlite.stop();
      throw err;
    });
    const sqliteRounds: LoadResult[] = [];
    const pgRounds: LoadResult[] = [];
    try {
      await load('warm-up', { url: `${sqlite.url}/flows/bench/quote/run`, body, headers, durationSec: 2 });
      await load('warm-up', { url: `${node1.url}/flows/bench/quote/run`, body, headers, durationSec: 2 });
      for (let round = 0; round < ROUNDS; round++) {
        sqliteRounds.push(
          await load('/run, SQLite (state dir)', {
            url: `${sqlite.url}/flows/bench/quote/run`,
            body,
            headers,
            durationSec: duration / ROUNDS,
          }),
        );
        pgRounds.push(
          await load('/run, PostgreSQL store', {
            url: `${node1.url}/flows/bench/quote/run`,
            body,
            headers,
            durationSec: duration / ROUNDS,
          }),
        );
      }
    } finally {
      await sqlite.stop();
    }
    rows.push(combine(sqliteRounds), combine(pgRounds));
    targets.push({
      label: '/run PostgreSQL / SQLite',
      value: rows[1]!.reqPerSec / rows[0]!.reqPerSec,
      target: TARGET_RUN_RATIO,
    });

    // 2. Durable /enqueue against pg-boss send, alternating rounds at the same concurrency.
    const enqueueUrl = `${node1.url}/flows/bench/sink/enqueue`;
    const boss = await startBossSender({
      connectionString: database,
      schema: bossSchema,
      queue: 'bench',
      data: JSON.parse(body) as object,
      dropSchema: (s) => dropSchema(admin, s),
    });
    const bossRounds: LoadResult[] = [];
    const enqueueRounds: LoadResult[] = [];
    const heldRounds: LoadResult[] = [];
    // pg-boss `send` only stores the job; nothing consumes it during the round. The like-for-like
    // /enqueue is one whose worker is held back while it is measured: the bench holds the `held`
    // queue's worker lock (the node then finds it "consumed elsewhere"), and lets it go after each
    // round so the node's hand-over sweep starts the worker and the backlog drains before the next
    // (a queue per round: once a node runs a queue's worker it keeps it, and its lock).
    // The /enqueue rounds of `sink` are the service as it runs: its worker consumes meanwhile.
    try {
      await load('warm-up', { url: enqueueUrl, body, headers, durationSec: 2, connections: ENQUEUE_CONNECTIONS });
      await boss.round('warm-up', ENQUEUE_CONNECTIONS, 1);
      for (let round = 0; round < ROUNDS; round++) {
        bossRounds.push(
          await boss.round(`pg-boss send (${ENQUEUE_CONNECTIONS} in flight)`, ENQUEUE_CONNECTIONS, duration / ROUNDS),
        );
        const held = `held${round}`;
        const heldLock = advisoryLockKey(svcSchema, queueLockName('bench', held)).key;
        await admin.query('SELECT pg_advisory_lock($1::bigint)', [heldLock]);
        try {
          heldRounds.push(
            await load(`/enqueue, PostgreSQL, worker held (${ENQUEUE_CONNECTIONS} conns)`, {
              url: `${node1.url}/flows/bench/${held}/enqueue`,
              body,
              headers,
              durationSec: duration / ROUNDS,
              connections: ENQUEUE_CONNECTIONS,
            }),
          );
        } finally {
          await admin.query('SELECT pg_advisory_unlock($1::bigint)', [heldLock]);
        }
        worst[0] = larger(worst[0], await drained(admin, svcSchema, held));
        enqueueRounds.push(
          await load(`/enqueue, PostgreSQL, worker running (${ENQUEUE_CONNECTIONS} conns)`, {
            url: enqueueUrl,
            body,
            headers,
            durationSec: duration / ROUNDS,
            connections: ENQUEUE_CONNECTIONS,
          }),
        );
        // The workers' backlog must not fall on the next round, pg-boss's or the next part's.
        worst[0] = larger(worst[0], await drained(admin, svcSchema, 'sink'));
      }
    } finally {
      await boss.close();
    }
    rows.push(combine(bossRounds), combine(heldRounds), combine(enqueueRounds));
    targets.push({
      label: '/enqueue PostgreSQL (worker held, like send) / pg-boss send',
      value: rows[3]!.reqPerSec / rows[2]!.reqPerSec,
      target: TARGET_ENQUEUE_RATIO,
    });
    targets.push({
      label: '/enqueue PostgreSQL (worker running) / pg-boss send',
      value: rows[4]!.reqPerSec / rows[2]!.reqPerSec,
      target: undefined,
    });

    // 3. 1, 2 and 3 servers on the store: a node is added between measurements, so each figure is
    // that of a cluster of that size (every node's worker drains the shared queue).
    for (let nodes = 1; nodes <= MAX_NODES; nodes++) {
      if (children.length < nodes) {
        const added = await startNode();
        await load('warm-up', { url: `${added.url}/flows/bench/quote/run`, body, headers, durationSec: 1 });
      }
      const run: LoadResult[] = [];
      const enqueue: LoadResult[] = [];
      for (let round = 0; round < ROUNDS / 2; round++) {
        run.push(
          await spread(
            `/run, ${nodes} node(s)`,
            children,
            '/flows/bench/quote/run',
            RUN_CONNECTIONS,
            duration / ROUNDS,
            body,
            headers,
          ),
        );
        enqueue.push(
          await spread(
            `/enqueue, ${nodes} node(s)`,
            children,
            '/flows/bench/sink/enqueue',
            ENQUEUE_CONNECTIONS,
            duration / ROUNDS,
            body,
            headers,
          ),
        );
        worst[1] = larger(worst[1], await drained(admin, svcSchema));
      }
      perNodes.push({ nodes, run: combine(run), enqueue: combine(enqueue) });
    }
  } finally {
    try {
      for (const c of children) await c.stop().catch(() => undefined);
      await dropSchema(admin, svcSchema);
      // Also pg-boss's, in case its start failed half-way (the sender drops it otherwise).
      await dropSchema(admin, bossSchema);
    } finally {
      await admin.end();
    }
  }

  process.stdout.write(
    `\nPostgreSQL store (issue 23): ${parseStoreUrl(storeUrl.toString()).redacted} (schema dropped)\n`,
  );
  printTable([...rows, ...perNodes.flatMap((n) => [n.run, n.enqueue])]);
  worst.forEach(({ backlog, left, seconds }, part) => {
    process.stdout.write(
      `part ${part + 2}: the largest backlog an /enqueue round left the workers was ${backlog} messages, ${left === 0 ? `worked off in ${seconds.toFixed(1)} s` : `${left} still waiting after ${seconds.toFixed(0)} s`} (waited for before the next round)\n`,
    );
  });
  for (const t of targets) {
    const verdict =
      t.target === undefined
        ? '(shown, no target)'
        : `target >= ${t.target.toFixed(2)}   ${t.value >= t.target ? 'MET' : 'NOT MET'}`;
    process.stdout.write(`${t.label.padEnd(62)} ${t.value.toFixed(2).padStart(6)}   ${verdict}\n`);
  }
  process.stdout.write('nodes   /run req/s   /enqueue req/s   (load spread over the nodes, one autocannon each)\n');
  for (const n of perNodes) {
    process.stdout.write(
      `${String(n.nodes).padStart(5)}   ${n.run.reqPerSec.toFixed(0).padStart(10)}   ${n.enqueue.reqPerSec.toFixed(0).padStart(14)}\n`,
    );
  }
  const cores = availableParallelism();
  if (cores <= MAX_NODES) {
    process.stdout.write(
      `this machine has ${cores} core(s), shared by the nodes, PostgreSQL and the load generator: more nodes than cores cannot scale here; the node figures show what a node costs, not what a cluster gains\n`,
    );
  }
  if ([...rows, ...perNodes.flatMap((n) => [n.run, n.enqueue])].some((r) => r.non2xx > 0 || r.errors > 0)) {
    process.stdout.write(
      'WARNING: a server answered non-2xx, or a request or send failed, during the PostgreSQL part\n',
    );
  }
}

/** One autocannon per node, run together, `connections` spread evenly; their req/s summed. */
async function spread(
  label: string,
  nodes: readonly Child[],
  path: string,
  connections: number,
  durationSec: number,
  body: string,
  headers: Record<string, string>,
): Promise<LoadResult> {
  const each = Math.max(1, Math.round(connections / nodes.length));
  const results = await Promise.all(
    nodes.map((n) => load(label, { url: `${n.url}${path}`, body, headers, durationSec, connections: each })),
  );
  return {
    label,
    reqPerSec: results.reduce((a, r) => a + r.reqPerSec, 0),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    non2xx: results.reduce((a, r) => a + r.non2xx, 0),
    errors: results.reduce((a, r) => a + r.errors, 0),
  };
}

/** Pause after the /enqueue rounds until the workers have worked off the queue. @default 60 s */
const DRAIN_TIMEOUT_MS = 60_000;

interface Drained {
  /** Messages waiting when the rounds ended. */
  readonly backlog: number;
  /** Still waiting when the wait gave up. */
  readonly left: number;
  readonly seconds: number;
}

/** Waits (up to DRAIN_TIMEOUT_MS) for the sink queue to be empty, counting its rows in the store. */
async function drained(client: pg.Client, schema: string, flow = 'sink'): Promise<Drained> {
  const count = async () =>
    Number(
      (
        await client.query<{ n: string }>(
          `SELECT count(*) AS n FROM "${schema}".queue_messages WHERE tenant = 'bench' AND flow = $1`,
          [flow],
        )
      ).rows[0]!.n,
    );
  const t0 = performance.now();
  const backlog = await count();
  let left = backlog;
  while (left > 0 && performance.now() - t0 < DRAIN_TIMEOUT_MS) {
    await new Promise((r) => setTimeout(r, 200));
    left = await count();
  }
  return { backlog, left, seconds: (performance.now() - t0) / 1000 };
}

function larger(a: Drained | undefined, b: Drained): Drained {
  return a === undefined || b.backlog > a.backlog ? b : a;
}

/** DROP SCHEMA ... CASCADE, once every server of the schema has stopped. */
async function dropSchema(client: pg.Client, schema: string): Promise<void> {
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/**
 * Scale part "keys": 1, 10,000 and 100,000 API keys over 1,000 tenants (1 tenant at size 1). At
 * each size: /run throughput, p99 and server CPU per request with one valid key; throughput and
 * server CPU per request for a well-formed key that does not exist (401: the gate's one indexed
 * read of `key_hash`, since only existing keys are cached), and that read alone, in-process. Target (issue 22): /run at 100,000 keys within 5% of the 1-key figure.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { load, type LoadResult } from '../load.js';
import { roundsOverGenerations, sizeLabel, targetAt, type Generation, type RoundTarget } from './rounds.js';
import { inOneTransaction, quoteFlowSource, seedKeys, seedTenants, tenantIds } from './seed.js';
import { median, rssBytes, startTimedServer, type TimedServer } from './timed-server.js';
import type { ScaleContext, ScaleFigure, ScalePart, ScaleSection } from './types.js';
import { compileFlow } from '../../src/flow/compile.js';
import { isoNow } from '../../src/common/clock.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { SqliteKeysStore } from '../../src/store/sqlite/sqlite-keys-store.js';
import { registryMigrations } from '../../src/store/sqlite/migrations/registry.js';
import { generateKey, hashKey } from '../../src/store/contracts/index.js';

interface Plan {
  readonly sizes: readonly number[];
  readonly tenants: number;
  /** Sets of fresh servers the rounds are spread over (see roundsOverGenerations). */
  readonly generations: number;
  /** Rounds per generation. */
  readonly rounds: number;
  readonly roundSec: number;
  readonly warmUpSec: number;
  readonly settleMs: number;
}

const FULL: Plan = {
  sizes: [1, 10_000, 100_000],
  tenants: 1_000,
  generations: 3,
  rounds: 2,
  roundSec: 3,
  warmUpSec: 2,
  settleMs: 1000,
};
const QUICK: Plan = {
  sizes: [1, 200],
  tenants: 20,
  generations: 1,
  rounds: 1,
  roundSec: 1,
  warmUpSec: 0.5,
  settleMs: 200,
};

const BODY = JSON.stringify({ id: 'o-1', total: 42 });
/** Well-formed (svk_ and 32 hex) and absent from every installation. */
const UNKNOWN_KEY = `svk_${'0123456789abcdef'.repeat(2)}`;
const MB = 1024 * 1024;

interface Installation {
  readonly count: number;
  readonly dir: string;
  readonly db: string;
  readonly key: string;
  readonly seedMs: number;
  /** Microseconds per SqliteKeysStore.findByHash of a hash that is not there. */
  readonly unknownLookupUs: number;
}

const LOOKUP_COUNT = 20_000;
const LOOKUP_ROUNDS = 5;

/** What the gate pays for an unknown key besides the HTTP exchange: one indexed read that finds nothing. */
function unknownLookupUs(db: string): number {
  const conn = openDb(db, registryMigrations);
  try {
    const keys = new SqliteKeysStore(conn);
    const hashes = Array.from({ length: LOOKUP_COUNT }, () => hashKey(generateKey()));
    const rounds: number[] = [];
    for (let round = 0; round < LOOKUP_ROUNDS; round++) {
      const t0 = performance.now();
      for (const h of hashes) if (keys.findByHash(h) !== undefined) throw new Error('a random key exists');
      rounds.push(((performance.now() - t0) * 1000) / LOOKUP_COUNT);
    }
    return median(rounds);
  } finally {
    conn.close();
  }
}

const RUN_PATH = '/flows/t0001/quote/run';

async function seedInstallation(ctx: ScaleContext, plan: Plan, count: number): Promise<Installation> {
  const dir = join(ctx.workDir, `keys-${count}`);
  mkdirSync(dir, { recursive: true });
  const db = join(dir, 'state', 'registry.db');
  const tenants = tenantIds(count === 1 ? 1 : plan.tenants);
  const flow = compileFlow(quoteFlowSource('t0001', 'quote'));
  if (!flow.ir || !flow.bytes || !flow.hash)
    throw new Error(`the bench flow does not compile: ${JSON.stringify(flow.diagnostics)}`);
  const t0 = performance.now();
  const key = await inOneTransaction(db, async (stores) => {
    await seedTenants(stores, tenants);
    const keys = await seedKeys(stores, tenants, count);
    stores.artifacts.publish({
      tenant: 't0001',
      name: 'quote',
      version: '1.0.0',
      bytes: flow.bytes!,
      hash: flow.hash!,
      createdAt: isoNow(),
    });
    return keys.get('t0001')!;
  });
  const seedMs = performance.now() - t0;
  ctx.progress(
    `seeded ${sizeLabel(count, 'key', 'keys')} over ${tenants.length} tenant(s) in ${(seedMs / 1000).toFixed(1)} s`,
  );
  return { count, dir, db, key, seedMs, unknownLookupUs: unknownLookupUs(db) };
}

const headersFor = (key: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${key}` });

export const benchKeyScale: ScalePart = async (ctx: ScaleContext): Promise<ScaleSection> => {
  const plan = ctx.quick ? QUICK : FULL;
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: ctx.workDir, RUST_LOG: 'warn' };
  delete env.NODE_TEST_CONTEXT;
  const insts: Installation[] = [];
  for (const n of plan.sizes) insts.push(await seedInstallation(ctx, plan, n));
  const servers: TimedServer[] = [];
  try {
    const target = (i: number, kind: 'valid' | 'unknown'): RoundTarget => ({
      label: `${sizeLabel(insts[i]!.count, 'key', 'keys')} ${kind}`,
      pid: servers[i]!.pid,
      measure: (sec: number): Promise<LoadResult> =>
        load(kind, {
          url: `${servers[i]!.url}${RUN_PATH}`,
          body: BODY,
          headers: headersFor(kind === 'valid' ? insts[i]!.key : UNKNOWN_KEY),
          durationSec: sec,
        }),
    });
    // Valid and unknown key of every size in the same interleaved rounds.
    const targets = () => [...insts.map((_, i) => target(i, 'valid')), ...insts.map((_, i) => target(i, 'unknown'))];
    const rssAfter: number[][] = insts.map(() => []);
    const generation = async (): Promise<Generation> => {
      for (const inst of insts) {
        servers.push(
          await startTimedServer({
            svcBin: ctx.svcBin,
            db: inst.db,
            cwd: inst.dir,
            env,
            probe: { path: RUN_PATH, headers: headersFor(inst.key), body: BODY },
          }),
        );
      }
      return {
        targets: targets(),
        stop: async () => {
          servers.forEach((s, i) => rssAfter[i]!.push(rssBytes(s.pid)));
          for (const s of servers.splice(0)) await s.stop();
        },
      };
    };
    const n = insts.length;
    // Each target's ratio is to the 1-key server's same kind of request, in the same round.
    const r = await roundsOverGenerations(plan.generations, generation, plan, ctx.progress, (i) => (i < n ? 0 : n));
    const rssAfterMb = rssAfter.map((v) => median(v) / MB);

    const valid = r.reqPerSec.slice(0, n);
    const unknown = r.reqPerSec.slice(n);
    const counts = plan.sizes;
    const validRatio = r.ratioToBase.slice(0, n);
    const wrongStatus = (rs: readonly LoadResult[], expectOk: boolean) =>
      rs.reduce((a, x) => a + x.errors + (expectOk ? x.non2xx : 0), 0);
    const figures: ScaleFigure[] = [
      {
        name: '/run throughput, valid key (req/s)',
        values: valid,
        higherIsBetter: true,
      },
      {
        name: '/run throughput, valid key, against 1 key: median of per-round ratios (x)',
        values: validRatio,
        higherIsBetter: true,
        target: `>= 0.95x at 100,000 keys: ${targetAt(
          counts,
          validRatio,
          100_000,
          (v) => v >= 0.95,
          (v) => `${v.toFixed(3)}x`,
        )}`,
      },
      { name: '/run p99, valid key (ms)', values: r.p99Ms.slice(0, n), higherIsBetter: false },
      {
        name: '/run server CPU per request, valid key (us)',
        values: r.cpuUsPerRequest.slice(0, n),
        higherIsBetter: false,
      },
      {
        name: 'unknown key, 401 throughput (req/s)',
        values: unknown,
        higherIsBetter: true,
      },
      {
        name: 'unknown key, 401 server CPU per request (us)',
        values: r.cpuUsPerRequest.slice(n),
        higherIsBetter: false,
      },
      {
        name: 'unknown-key lookup in-process, SqliteKeysStore.findByHash (us)',
        values: insts.map((i) => i.unknownLookupUs),
        higherIsBetter: false,
      },
      { name: 'RSS after the load, median of the generations (MB)', values: rssAfterMb, higherIsBetter: false },
    ];
    const notes = [
      `Each size: that many keys (SHA-256 hashes, as svc keys create stores them) spread evenly over ${plan.tenants.toLocaleString('en-US')} tenants (1 at size 1), seeded in-process through createApiKey in one transaction (${insts.map((i) => `${(i.seedMs / 1000).toFixed(1)} s`).join(', ')}); the flow is the bench quote flow of tenant t0001.`,
      `The servers run side by side, ${plan.generations} generation(s) of fresh servers one after the other; valid-key and unknown-key loads of every size go in the same interleaved rounds (${plan.rounds} round(s) of ${plan.roundSec} s per generation, 32 connections, after a ${plan.warmUpSec} s warm-up; medians over every round). Rounds (req/s): ${[...insts.map((inst) => `${sizeLabel(inst.count, 'key', 'keys')} valid`), ...insts.map((inst) => `${sizeLabel(inst.count, 'key', 'keys')} unknown`)].map((label, i) => `${label}: ${r.rounds[i]!.map((x) => x.reqPerSec.toFixed(0)).join(' ')}`).join('; ')}.`,
      `Unknown key: svk_ and 32 hex characters that no installation holds; the gate caches only keys that exist, so each such request costs one indexed read of api_keys.key_hash. A 401 is answered before the body is read; the bench's body is small, so the connection is kept and Node discards the body (a body over 16 KiB, chunked, or announced with Expect: 100-continue closes it instead). Its p99 is not shown; the in-process lookup (median of ${LOOKUP_ROUNDS} rounds of ${LOOKUP_COUNT.toLocaleString('en-US')} distinct unknown hashes, after the seed) isolates what the key count can change. Its answers were ${
        r.rounds
          .slice(n)
          .flat()
          .reduce((a, x) => a + x.non2xx, 0) > 0
          ? 'non-2xx as expected'
          : 'NOT refused (check the gate)'
      }.`,
    ];
    const validFailures = r.rounds.slice(0, n).map((rs) => wrongStatus(rs, true));
    if (validFailures.some((x) => x > 0))
      notes.push(`WARNING: non-2xx answers or errors with the valid key: ${validFailures.join(', ')}`);
    return {
      title: 'Keys and tenants',
      sizes: counts.map((count) => ({ label: sizeLabel(count, 'key', 'keys'), count })),
      figures,
      notes,
    };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
  }
};

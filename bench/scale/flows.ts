/**
 * Scale part "flows": 1, 1,000 and 10,000 deployed flows of 3 versions each, over 10 tenants (1 at
 * size 1). At each size: `svc serve` start-up until /health answers and until the first /run
 * succeeds, RSS after start and after the load, /run throughput and p99 on one flow, and one
 * `svc deploy` process. Targets (issue 22): /run at 10,000 flows within 5% of the 1-flow figure;
 * start-up under 1 s at 1,000 flows and under 3 s at 10,000; RSS under 250 MB at the largest size.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from '../load.js';
import { roundsOverGenerations, sizeLabel, targetAt, type Generation } from './rounds.js';
import { flowName, inOneTransaction, quoteFlowSource, seedFlows, seedKeys, seedTenants, tenantIds } from './seed.js';
import { median, rssBytes, startTimedServer, type TimedServer } from './timed-server.js';
import type { ScaleContext, ScaleFigure, ScalePart, ScaleSection } from './types.js';

const FULL_SIZES = [1, 1_000, 10_000];
const QUICK_SIZES = [1, 20];
const VERSIONS = 3;
const TENANTS = 10;
const MB = 1024 * 1024;

interface Plan {
  readonly sizes: readonly number[];
  /** Start-ups per size (the last one's server stays for the load). */
  readonly starts: number;
  readonly deploys: number;
  /** Sets of fresh servers the /run rounds are spread over (see roundsOverGenerations). */
  readonly generations: number;
  /** /run rounds per generation. */
  readonly rounds: number;
  readonly roundSec: number;
  readonly warmUpSec: number;
  readonly settleMs: number;
}

const FULL: Plan = {
  sizes: FULL_SIZES,
  starts: 3,
  deploys: 3,
  generations: 4,
  rounds: 2,
  roundSec: 3,
  warmUpSec: 2,
  settleMs: 1000,
};
const QUICK: Plan = {
  sizes: QUICK_SIZES,
  starts: 1,
  deploys: 1,
  generations: 1,
  rounds: 1,
  roundSec: 1,
  warmUpSec: 0.5,
  settleMs: 200,
};

/** One size's state directory, seeded, with the key and route of the measured flow. */
interface Installation {
  readonly count: number;
  readonly dir: string;
  readonly db: string;
  readonly runPath: string;
  readonly headers: Record<string, string>;
  readonly seedMs: number;
}

const BODY = JSON.stringify({ id: 'o-1', total: 42 });

async function seedInstallation(ctx: ScaleContext, count: number): Promise<Installation> {
  const dir = join(ctx.workDir, `flows-${count}`);
  mkdirSync(dir, { recursive: true });
  const db = join(dir, 'state', 'registry.db');
  const tenants = tenantIds(count === 1 ? 1 : TENANTS);
  const t0 = performance.now();
  const key = await inOneTransaction(db, async (stores) => {
    await seedTenants(stores, tenants);
    const keys = await seedKeys(stores, tenants, tenants.length);
    seedFlows(stores, { tenants, flows: count, versions: VERSIONS });
    return keys.get(tenants[0]!)!;
  });
  const seedMs = performance.now() - t0;
  ctx.progress(
    `seeded ${sizeLabel(count, 'flow', 'flows')} x ${VERSIONS} versions over ${tenants.length} tenant(s) in ${(seedMs / 1000).toFixed(1)} s`,
  );
  return {
    count,
    dir,
    db,
    runPath: `/flows/${tenants[0]}/${flowName(0)}/run`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    seedMs,
  };
}

/** Wall time of one `svc deploy <file> -v <version>` process against the installation's registry. */
function deployMs(ctx: ScaleContext, inst: Installation, env: NodeJS.ProcessEnv, version: string): number {
  const file = join(inst.dir, 'deployed.flow.md');
  writeFileSync(file, quoteFlowSource('t0001', flowName(0), 100 + Number(version.split('.').at(-1))));
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [ctx.svcBin, 'deploy', file, '-v', version, '--db', inst.db], {
    cwd: inst.dir,
    env,
    encoding: 'utf8',
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`svc deploy failed (${r.status}): ${r.stderr}`);
  return ms;
}

export const benchFlowScale: ScalePart = async (ctx: ScaleContext): Promise<ScaleSection> => {
  const plan = ctx.quick ? QUICK : FULL;
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: ctx.workDir, RUST_LOG: 'warn' };
  delete env.NODE_TEST_CONTEXT;
  const insts: Installation[] = [];
  for (const n of plan.sizes) insts.push(await seedInstallation(ctx, n));
  const servers: TimedServer[] = [];
  try {
    // Start-ups one at a time (nothing else of ours running), sizes alternating round by round.
    const health: number[][] = insts.map(() => []);
    const firstRun: number[][] = insts.map(() => []);
    const rssStart: number[][] = insts.map(() => []);
    const startOne = (inst: Installation) =>
      startTimedServer({
        svcBin: ctx.svcBin,
        db: inst.db,
        cwd: inst.dir,
        env,
        probe: { path: inst.runPath, headers: inst.headers, body: BODY },
      });
    for (let round = 0; round < plan.starts; round++) {
      for (const [i, inst] of insts.entries()) {
        const s = await startOne(inst);
        health[i]!.push(s.healthMs);
        firstRun[i]!.push(s.firstRunMs);
        rssStart[i]!.push(rssBytes(s.pid));
        await s.stop();
      }
      ctx.progress(
        `start-up round ${round + 1}/${plan.starts}: ${insts.map((inst, i) => `${inst.count}: /health ${health[i]!.at(-1)!.toFixed(0)} ms, /run ${firstRun[i]!.at(-1)!.toFixed(0)} ms`).join('; ')}`,
      );
    }

    // RSS after the load, per size, one reading per generation (before its servers stop).
    const rssAfter: number[][] = insts.map(() => []);
    const generation = async (): Promise<Generation> => {
      for (const inst of insts) servers.push(await startOne(inst));
      return {
        targets: insts.map((inst, i) => ({
          label: sizeLabel(inst.count, 'flow', 'flows'),
          pid: servers[i]!.pid,
          measure: (sec: number) =>
            load(inst.runPath, {
              url: `${servers[i]!.url}${inst.runPath}`,
              body: BODY,
              headers: inst.headers,
              durationSec: sec,
            }),
        })),
        stop: async () => {
          servers.forEach((s, i) => rssAfter[i]!.push(rssBytes(s.pid)));
          for (const s of servers.splice(0)) await s.stop();
        },
      };
    };
    const loadResult = await roundsOverGenerations(plan.generations, generation, plan, ctx.progress);
    const failures = loadResult.rounds.map((rs) => rs.reduce((a, r) => a + r.non2xx + r.errors, 0));

    const deploys: number[][] = insts.map(() => []);
    for (let round = 0; round < plan.deploys; round++) {
      for (const [i, inst] of insts.entries()) deploys[i]!.push(deployMs(ctx, inst, env, `2.0.${round}`));
    }
    ctx.progress(
      `svc deploy: ${insts.map((inst, i) => `${inst.count}: ${median(deploys[i]!).toFixed(0)} ms`).join(', ')}`,
    );

    const counts = plan.sizes;
    const largest = counts.at(-1)!;
    const runRate = loadResult.reqPerSec;
    const runRatio = loadResult.ratioToBase;
    const healthMs = health.map(median);
    const rssStartMb = rssStart.map((v) => median(v) / MB);
    const rssAfterMb = rssAfter.map((v) => median(v) / MB);
    const rssAfterMaxMb = rssAfter.map((v) => Math.max(...v) / MB);
    const ms = (v: number) => `${v.toFixed(0)} ms`;
    const mb = (v: number) => `${v.toFixed(0)} MB at ${largest.toLocaleString('en-US')}`;
    const figures: ScaleFigure[] = [
      {
        name: 'start-up until /health answers (ms)',
        values: healthMs,
        higherIsBetter: false,
        target: `< 1,000 ms at 1,000 flows: ${targetAt(counts, healthMs, 1_000, (v) => v < 1_000, ms)}; < 3,000 ms at 10,000: ${targetAt(counts, healthMs, 10_000, (v) => v < 3_000, ms)}`,
      },
      { name: 'start-up until the first /run succeeds (ms)', values: firstRun.map(median), higherIsBetter: false },
      {
        name: 'RSS after start (MB)',
        values: rssStartMb,
        higherIsBetter: false,
        target: `< 250 MB at the largest size: ${targetAt(counts, rssStartMb, largest, (v) => v < 250, mb)}`,
      },
      {
        name: 'RSS after the load, median of the generations (MB)',
        values: rssAfterMb,
        higherIsBetter: false,
        target: `< 250 MB at the largest size: ${targetAt(counts, rssAfterMb, largest, (v) => v < 250, mb)}`,
      },
      {
        name: 'RSS after the load, highest generation (MB)',
        values: rssAfterMaxMb,
        higherIsBetter: false,
        target: `< 250 MB at the largest size: ${targetAt(counts, rssAfterMaxMb, largest, (v) => v < 250, mb)}`,
      },
      {
        name: '/run throughput (req/s)',
        values: runRate,
        higherIsBetter: true,
      },
      {
        name: '/run throughput against 1 flow, median of per-round ratios (x)',
        values: runRatio,
        higherIsBetter: true,
        target: `>= 0.95x at 10,000 flows: ${targetAt(
          counts,
          runRatio,
          10_000,
          (v) => v >= 0.95,
          (v) => `${v.toFixed(3)}x`,
        )}`,
      },
      { name: '/run p99 (ms)', values: loadResult.p99Ms, higherIsBetter: false },
      { name: '/run server CPU per request (us)', values: loadResult.cpuUsPerRequest, higherIsBetter: false },
      { name: 'svc deploy of one flow, one process (ms)', values: deploys.map(median), higherIsBetter: false },
    ];
    const notes = [
      `Each size: that many flows (the bench quote flow, renamed) with ${VERSIONS} versions each, each version its own artifact, over ${TENANTS} tenants (1 at size 1), seeded in-process through SqliteArtifactsStore.publish in one transaction (${insts.map((i) => `${(i.seedMs / 1000).toFixed(1)} s`).join(', ')}).`,
      `Start-up: time from spawn, median of ${plan.starts} start(s) per size, sizes alternating; RSS after start is read once the first /run succeeded (VmRSS of the server process, every thread).`,
      `/run: the first flow of the first tenant, the servers side by side, ${plan.generations} generation(s) of fresh servers one after the other, each with ${plan.rounds} interleaved round(s) of ${plan.roundSec} s (32 connections) after a ${plan.warmUpSec} s warm-up; throughput, p99 and CPU are medians over every round, and the ratio row is the median of each round's ratio to the 1-flow server of the same generation and round; rounds per size (req/s): ${loadResult.rounds.map((rs, i) => `${counts[i]}: ${rs.map((r) => r.reqPerSec.toFixed(0)).join(' ')}`).join('; ')}.`,
      `svc deploy: median of ${plan.deploys} process(es) per size, each deploying a new version of the measured flow, with no server running.`,
    ];
    if (failures.some((n) => n > 0))
      notes.push(`WARNING: non-2xx answers or errors during the load: ${failures.join(', ')}`);
    return {
      title: 'Flows',
      sizes: counts.map((count) => ({ label: sizeLabel(count, 'flow', 'flows'), count })),
      figures,
      notes,
    };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
  }
};

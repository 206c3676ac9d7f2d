/**
 * Audit part of `npm run bench:scale`: one tenant's hash chain of 10,000 and of 1,000,000 entries,
 * appended in-process with the project's SqliteAuditStore.appendMany in batches (the chain is computed as
 * in service), then `svc audit --tenant bench --verify` run as a child process: its wall time and
 * peak memory (VmHWM from /proc/<pid>/status, read every 10 ms until it exits; the highest VmRSS
 * seen is printed beside it).
 *
 * Full run: about 1 minute (measured 66 s; most of it appending the 1,000,000 entries); --quick: 11 s.
 * Target (issue 22): `svc audit --verify` streams: memory flat in the chain's length.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { SqliteAuditStore } from '../../src/store/sqlite/sqlite-audit-store.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { auditMigrations } from '../../src/store/sqlite/migrations/audit.js';
import { makeSandbox, MiB, TENANT, type PartSandbox } from './part-sandbox.js';
import { sampleMemory } from './proc-memory.js';
import type { ScaleContext, ScaleFigure, ScalePart, ScaleSection } from './types.js';

/** Entries per appendMany (one IMMEDIATE transaction each). */
const SEED_BATCH = 10_000;

interface SizeFigures {
  readonly seedSec: number;
  readonly entries: number;
  readonly wallMs: number;
  readonly peakMiB: number;
  readonly maxRssMiB: number;
  readonly auditDbMiB: number;
}

/** Appends `count` entries shaped like the request path's (queue.message.enqueued) to the tenant's chain. */
function seedChain(box: PartSandbox, count: number): void {
  const db = openDb(box.paths.auditDb, auditMigrations);
  try {
    const repo = new SqliteAuditStore(db);
    for (let from = 0; from < count; from += SEED_BATCH) {
      const batch = [];
      for (let i = from; i < Math.min(count, from + SEED_BATCH); i++) {
        batch.push({
          tenant: TENANT,
          eventType: 'queue.message.enqueued',
          payload: { flow: 'quote', id: i + 1, offset: i * 142, source: 'enqueue' },
        });
      }
      repo.appendMany(batch);
    }
  } finally {
    db.close();
  }
}

/** Runs `svc audit --verify` and samples its memory until it exits. */
async function verify(
  ctx: ScaleContext,
  box: PartSandbox,
): Promise<{ wallMs: number; peakMiB: number; maxRssMiB: number; out: string }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [ctx.svcBin, 'audit', '--tenant', TENANT, '--verify', '--db', box.db], {
    env: box.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const memory = sampleMemory(child.pid!, 10);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  try {
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const wallMs = performance.now() - t0;
    if (code !== 0) throw new Error(`svc audit --verify exited with ${code}: ${out}`);
    return { wallMs, peakMiB: memory.hwmMiB, maxRssMiB: memory.maxRssMiB, out };
  } finally {
    memory.stop();
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
  }
}

async function measureSize(ctx: ScaleContext, count: number, index: number): Promise<SizeFigures> {
  const box = makeSandbox(ctx, `audit-${index}`);
  const t0 = performance.now();
  seedChain(box, count);
  const seedSec = (performance.now() - t0) / 1000;
  const { size } = await import('node:fs').then((fs) => fs.statSync(box.paths.auditDb));
  ctx.progress(
    `audit: ${count.toLocaleString('en-US')} entries appended in ${seedSec.toFixed(1)} s; running svc audit --verify`,
  );
  const r = await verify(ctx, box);
  const m = /OK \((\d+) entr/.exec(r.out);
  if (!m) throw new Error(`svc audit --verify did not report OK: ${r.out}`);
  ctx.progress(`audit: ${m[1]} entries verified in ${r.wallMs.toFixed(0)} ms, peak ${r.peakMiB.toFixed(1)} MiB`);
  return {
    seedSec,
    entries: Number(m[1]),
    wallMs: r.wallMs,
    peakMiB: r.peakMiB,
    maxRssMiB: r.maxRssMiB,
    auditDbMiB: size / MiB,
  };
}

export const benchAuditScale: ScalePart = async (ctx: ScaleContext): Promise<ScaleSection> => {
  const counts = ctx.quick ? [1_000, 20_000] : [10_000, 1_000_000];
  const measured: SizeFigures[] = [];
  for (const [i, n] of counts.entries()) measured.push(await measureSize(ctx, n, i));
  const col = (pick: (f: SizeFigures) => number) => measured.map(pick);
  const ratio = measured[measured.length - 1]!.peakMiB / measured[0]!.peakMiB;
  const figures: ScaleFigure[] = [
    {
      name: 'svc audit --verify, wall time with process start (ms)',
      values: col((f) => f.wallMs),
      higherIsBetter: false,
    },
    { name: 'entries verified per second', values: col((f) => f.entries / (f.wallMs / 1000)), higherIsBetter: true },
    {
      name: 'svc audit --verify, peak memory (VmHWM, MiB)',
      values: col((f) => f.peakMiB),
      higherIsBetter: false,
      target: `flat in the chain's length (longest <= 1.25x the shortest): ${ratio.toFixed(2)}x, ${ratio <= 1.25 ? 'met' : 'NOT met'}`,
    },
    { name: 'audit.db (MiB)', values: col((f) => f.auditDbMiB), higherIsBetter: false },
  ];
  return {
    title: 'Audit chain',
    sizes: counts.map((n) => ({ label: `${n.toLocaleString('en-US')} entries`, count: n })),
    figures,
    notes: [
      `Entries appended in-process with SqliteAuditStore.appendMany, ${SEED_BATCH.toLocaleString('en-US')} a transaction (seed: ${measured.map((f) => `${f.seedSec.toFixed(1)} s`).join(' / ')}), after the tenant.registered entry \`svc tenant create\` wrote; payloads shaped like queue.message.enqueued.`,
      `Highest VmRSS seen (10 ms samples): ${measured.map((f) => `${f.maxRssMiB.toFixed(1)} MiB`).join(' / ')}.`,
    ],
  };
};

/**
 * Queue part of `npm run bench`: durable /enqueue throughput under many connections and the
 * worker drain rate of a one-step flow, beside a baseline of one fdatasync per 256-byte append
 * on the same disk and the bare node:http server of the /run part, measured again in rounds
 * alternating with /enqueue. The queue's worker runs all along, as it would in service; the
 * share of arrivals it processed during the rounds is printed too.
 * Targets: /enqueue >= 1.5x the fsync baseline and >= 0.4x bare; drain >= 7,000 messages/s.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { statePaths } from '../src/common/paths.js';
import { FileQueueStore } from '../src/queue/index.js';
import { deployFlow } from './bench-state.js';
import { combine, load, printTable, spawnListening, type LoadResult } from './load.js';
import { targetLines } from './targets.js';

export interface EnqueueBenchOptions {
  /** dist/src/main.js */
  readonly svcBin: string;
  /** Environment with HOME of the bench sandbox. */
  readonly env: NodeJS.ProcessEnv;
  /** Registry database of the sandbox (tenant `bench` exists). */
  readonly db: string;
  /** An API key of tenant `bench`. */
  readonly key: string;
  /** URL of the bare node:http server of the /run benchmark, still running: measured in rounds alternating with /enqueue. */
  readonly bareUrl: string;
  /** Seconds of each measurement. @default 8 */
  readonly durationSec?: number;
  /** Messages put in the queue before the drain is timed. @default 20000 */
  readonly drainCount?: number;
}

/** A one-step flow (tenant bench, flow sink): the target of the /enqueue benchmarks. */
export const SINK = `---
flowdoc_version: "0.1"
flow: sink
tenant: bench
log_level: event_only
---

## Step: answer
\`\`\`ntd
{"id": "{{ ctx.input.id }}", "status": "accepted"}
\`\`\`
`;

/** One fdatasync per 256-byte append, one writer: what durability costs without group commit. */
async function fsyncBaseline(dir: string, seconds: number): Promise<number> {
  const fh = await open(join(dir, 'fsync-baseline.log'), 'a');
  const rec = Buffer.alloc(256, 0x61);
  let n = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  try {
    while (performance.now() < end) {
      await fh.write(rec);
      await fh.datasync();
      n++;
    }
  } finally {
    await fh.close();
  }
  return n / ((performance.now() - t0) / 1000);
}

const ROUNDS = 4;

/** Counters of the sink queue, read the way `svc` tools read them (another FileQueueStore). */
async function probeStats(queuesDir: string): Promise<{ total: number; processed: number }> {
  const probe = new FileQueueStore({ queuesDir });
  try {
    const s = await probe.stats('bench', 'sink');
    return { total: s.total, processed: s.processed };
  } finally {
    await probe.close();
  }
}

/**
 * Waits until the worker of tenant/flow processed every message its queue holds (read as `svc`
 * tools read it, through another FileQueueStore), at most `timeoutMs`: a measurement that follows
 * one with the worker running starts without that run's backlog still being worked off beside it.
 */
export async function waitDrained(queuesDir: string, tenant: string, flow: string, timeoutMs: number): Promise<void> {
  const probe = new FileQueueStore({ queuesDir });
  try {
    const { total } = await probe.stats(tenant, flow);
    await waitProcessed(probe, tenant, flow, total, timeoutMs);
  } finally {
    await probe.close();
  }
}

async function waitProcessed(
  store: FileQueueStore,
  tenant: string,
  flow: string,
  want: number,
  timeoutMs: number,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while ((await store.stats(tenant, flow)).processed < want) {
    if (Date.now() > end) throw new Error(`drain did not reach ${want} messages in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A backlog of `count` messages in the queue of tenant/flow, written through the library while no server runs. */
export async function prefillQueue(
  queuesDir: string,
  tenant: string,
  flow: string,
  count: number,
  payloadOf: (i: number) => unknown,
): Promise<void> {
  const pre = new FileQueueStore({ queuesDir });
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++)
    batch.push(pre.append(tenant, flow, { correlationId: `drain-${i}`, payload: payloadOf(i) }));
  await Promise.all(batch);
  await pre.close();
}

/**
 * The worker's drain rate (messages/s) of a backlog of `backlog` messages already in the queue of
 * tenant/flow: one more submission through /enqueue starts the worker, then the clock runs until
 * every message is processed.
 */
export async function timeDrain(o: {
  readonly serverUrl: string;
  readonly queuesDir: string;
  readonly tenant: string;
  readonly flow: string;
  readonly backlog: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}): Promise<number> {
  const probe = new FileQueueStore({ queuesDir: o.queuesDir });
  try {
    const t0 = performance.now();
    const r = await fetch(`${o.serverUrl}/flows/${o.tenant}/${o.flow}/enqueue`, {
      method: 'POST',
      headers: o.headers,
      body: o.body,
    });
    if (r.status !== 202) throw new Error(`drain kick-off answered ${r.status}`);
    await waitProcessed(probe, o.tenant, o.flow, o.backlog + 1, 120_000);
    return (o.backlog + 1) / ((performance.now() - t0) / 1000);
  } finally {
    await probe.close();
  }
}

export async function benchEnqueue(o: EnqueueBenchOptions): Promise<void> {
  const duration = o.durationSec ?? 8;
  const drainCount = o.drainCount ?? 20_000;
  const paths = statePaths(o.db);
  for (const name of ['sink', 'drain'])
    deployFlow(o.svcBin, o.env, o.db, `${name}.flow.md`, SINK.replace('flow: sink', `flow: ${name}`));

  const fsyncRate = await fsyncBaseline(paths.stateDir, Math.min(duration, 3));

  // The drain backlog is written before the server starts (no worker yet), through the library.
  await prefillQueue(paths.queuesDir, 'bench', 'drain', drainCount, (i) => ({ id: `o-${i}`, total: 42 }));

  const server = await spawnListening(
    process.execPath,
    [o.svcBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', o.db],
    o.env,
  );
  const rows: LoadResult[] = [];
  let drainRate = 0;
  let keptUp = 0;
  try {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${o.key}` };
    const body = JSON.stringify({ id: 'o-1', total: 42 });
    // Drain first, alone: one submission starts the worker, then the backlog is timed.
    drainRate = await timeDrain({
      serverUrl: server.url,
      queuesDir: paths.queuesDir,
      tenant: 'bench',
      flow: 'drain',
      backlog: drainCount,
      headers,
      body,
    });

    const url = `${server.url}/flows/bench/sink/enqueue`;
    await load('warm-up', { url, body, headers, durationSec: 2, connections: 128 });
    // Alternating rounds, as for /run: a noisy neighbour on this shared machine falls on both.
    const bareRounds: LoadResult[] = [];
    const enqRounds: LoadResult[] = [];
    const before = await probeStats(paths.queuesDir);
    for (let round = 0; round < ROUNDS; round++) {
      bareRounds.push(await load('bare node:http', { url: o.bareUrl, body, headers, durationSec: duration / ROUNDS }));
      enqRounds.push(
        await load('svc /enqueue (durable, 128 conns)', {
          url,
          body,
          headers,
          durationSec: duration / ROUNDS,
          connections: 128,
        }),
      );
    }
    const after = await probeStats(paths.queuesDir);
    keptUp = (after.processed - before.processed) / Math.max(1, after.total - before.total);
    rows.push(combine(bareRounds), combine(enqRounds));
  } finally {
    await server.stop();
  }

  printTable(rows);
  const bare = rows[0]!.reqPerSec;
  const enq = rows[1]!.reqPerSec;
  const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
  process.stdout.write(`baseline: one fdatasync per 256-byte append  ${fmt(fsyncRate)} /s\n`);
  process.stdout.write(
    `/enqueue vs fsync baseline: ${(enq / fsyncRate).toFixed(2)}x (target >= 1.5x: ${enq / fsyncRate >= 1.5 ? 'met' : 'NOT met'})\n`,
  );
  process.stdout.write(
    `/enqueue vs bare node:http: ${(enq / bare).toFixed(2)} (target >= 0.40: ${enq / bare >= 0.4 ? 'met' : 'NOT met'})\n`,
  );
  process.stdout.write(
    `worker during the /enqueue rounds: processed ${(100 * keptUp).toFixed(0)}% of what was enqueued meanwhile${keptUp > 1 ? ' (over 100%: it also worked off messages left by the warm-up)' : ''}\n`,
  );
  process.stdout.write(
    `worker drain, one-step flow, ${fmt(drainCount)} messages: ${fmt(drainRate)} msgs/s (target >= 7,000: ${drainRate >= 7000 ? 'met' : 'NOT met'})\n`,
  );
  process.stdout.write(
    targetLines([
      { what: 'issue 40: /enqueue / bare node:http', value: enq / bare, target: 0.5, direction: 'at least' },
    ]),
  );
  if (rows[1]!.non2xx > 0 || rows[1]!.errors > 0)
    process.stdout.write('WARNING: /enqueue answered non-2xx or errored during the run\n');
}

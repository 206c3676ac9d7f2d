/**
 * Queue benchmark (`node dist/bench/queue-append.js [--concurrency 64] [--seconds 3] [--drain 20000]`):
 * group-commit append throughput with N concurrent appenders against a baseline of one fdatasync
 * per 256-byte append on the same disk, and the drain rate of a no-op handler.
 * Targets: appends >= 1.5x the baseline; drain >= 7,000 messages/s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FileQueueStore } from '../src/queue/index.js';

const { values } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '3' },
    drain: { type: 'string', default: '20000' },
    dir: { type: 'string' },
  },
});
const concurrency = Number(values.concurrency);
const seconds = Number(values.seconds);
const drainCount = Number(values.drain);
const root = mkdtempSync(join(values.dir ?? tmpdir(), 'svc-bench-queue-'));
/** A payload whose framed record is about 256 bytes. */
const payload = { order: 'x'.repeat(150), n: 0 };

async function baseline(): Promise<number> {
  const fh = await open(join(root, 'baseline.log'), 'a');
  const rec = Buffer.alloc(256, 0x61);
  let n = 0;
  const end = Date.now() + seconds * 1000;
  const t0 = performance.now();
  while (Date.now() < end) {
    await fh.write(rec);
    await fh.datasync();
    n++;
  }
  const rate = n / ((performance.now() - t0) / 1000);
  await fh.close();
  return rate;
}

async function groupCommit(store: FileQueueStore, flow: string, workers: number): Promise<number> {
  let n = 0;
  const end = Date.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < end) {
        await store.append('bench', flow, { correlationId: 'bench', payload: { ...payload, n } });
        n++;
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

async function drain(store: FileQueueStore): Promise<number> {
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < drainCount; i++)
    batch.push(store.append('bench', 'drain', { correlationId: 'bench', payload: { ...payload, n: i } }));
  await Promise.all(batch);
  let seen = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const t0 = performance.now();
  await store.startConsumer('bench', 'drain', {
    handler: async () => {
      if (++seen === drainCount) done();
      return { kind: 'ack' };
    },
  });
  await finished;
  const rate = drainCount / ((performance.now() - t0) / 1000);
  await store.stopConsumer('bench', 'drain');
  return rate;
}

const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
try {
  const base = await baseline();
  console.log(`baseline: one fdatasync per 256-byte append   ${fmt(base)} msgs/s`);
  const store = new FileQueueStore({ queuesDir: join(root, 'queues') });
  const single = await groupCommit(store, 'single', 1);
  console.log(
    `queue append, 1 appender                      ${fmt(single)} msgs/s  (${(single / base).toFixed(2)}x baseline)`,
  );
  const grouped = await groupCommit(store, 'grouped', concurrency);
  console.log(
    `queue append, ${concurrency} concurrent appenders (group commit) ${fmt(grouped)} msgs/s  (${(grouped / base).toFixed(2)}x baseline; target >= 1.5x: ${grouped / base >= 1.5 ? 'met' : 'NOT met'})`,
  );
  const drained = await drain(store);
  console.log(
    `drain, no-op handler, ${drainCount} messages        ${fmt(drained)} msgs/s  (target >= 7,000: ${drained >= 7000 ? 'met' : 'NOT met'})`,
  );
  await store.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}

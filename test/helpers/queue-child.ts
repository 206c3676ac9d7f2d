/**
 * A child process for the queue's multi-process tests (run as `node queue-child.js <mode> ...`):
 * - `hold-lock <path>`: takes the lock, prints `locked`, waits to be killed;
 * - `append <queuesDir> <tenant> <flow> <count> <concurrency>`: appends, printing `id offset` per ack;
 * - `storm <queuesDir> <tenant> <flow> <concurrency>`: appends until killed, printing each acked id
 *   and its offset (`id offset`);
 * - `consume-hang <queuesDir> <tenant> <flow>`: consumes (checkpoint per ack), prints `got <id>`;
 *   a message whose payload has `hang: true` never finishes;
 * - `consume-print <queuesDir> <tenant> <flow> <leaseMs>`: consumes with that lock lease, prints
 *   `got <id>` per delivery and `lost` when another process takes the lock over.
 * - `consume-drain <queuesDir> <tenant> <flow> <leaseMs>`: as consume-print with the default
 *   checkpoint interval, each delivery spending 0.2 ms: a worker draining a backlog.
 * - `consume-trim <queuesDir> <tenant> <flow>`: consumes slowly (1 ms a message, checkpoint per
 *   ack), printing `got <id>`, while compaction passes run back to back with a prefix cut at any
 *   size, printing `trimmed` for each cut: a worker that lags behind its producers.
 */
import { LockFile, FileQueueStore } from '../../src/queue/index.js';

const [mode, ...args] = process.argv.slice(2);

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<void> {
  if (mode === 'hold-lock') {
    await LockFile.acquire(args[0]!, { leaseMs: Number(args[1] ?? 30_000) });
    out('locked');
    setInterval(() => undefined, 1 << 30);
    return;
  }
  const [queuesDir, tenant, flow] = args as [string, string, string];
  const store = new FileQueueStore({ queuesDir });
  if (mode === 'append') {
    const total = Number(args[3]);
    const concurrency = Number(args[4]);
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const n = next++;
        const r = await store.append(tenant, flow, {
          correlationId: `c-${process.pid}-${n}`,
          payload: { n, pid: process.pid },
        });
        out(`${r.id} ${r.byteOffset}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await store.close();
    return;
  }
  if (mode === 'storm') {
    const concurrency = Number(args[3]);
    let n = 0;
    const worker = async () => {
      for (;;) {
        const r = await store.append(tenant, flow, {
          correlationId: `s-${n}`,
          payload: { n: n++, pad: 'x'.repeat(100) },
        });
        out(`${r.id} ${r.byteOffset}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return;
  }
  if (mode === 'consume-hang') {
    await store.startConsumer(tenant, flow, {
      pollIntervalMs: 20,
      checkpointEvery: 1,
      handler: async (msg) => {
        out(`got ${msg.id}`);
        // Messages with `hang` never finish: the process is killed between run and checkpoint.
        if ((msg.payload as { hang?: boolean }).hang) return new Promise(() => undefined);
        return { kind: 'ack' };
      },
    });
    setInterval(() => undefined, 1 << 30);
    return;
  }
  if (mode === 'consume-print' || mode === 'consume-drain') {
    const draining = mode === 'consume-drain';
    await store.startConsumer(tenant, flow, {
      pollIntervalMs: 20,
      ...(draining ? {} : { checkpointEvery: 1 }),
      lockLeaseMs: Number(args[3]),
      handler: async (msg) => {
        out(`got ${msg.id}`);
        if (draining) for (const until = performance.now() + 0.2; performance.now() < until;);
        return { kind: 'ack' };
      },
      onLockLost: () => out('lost'),
    });
    setInterval(() => undefined, 1 << 30);
    return;
  }
  if (mode === 'consume-trim') {
    const trimming = new FileQueueStore({
      queuesDir,
      prefixCut: { minPrefixBytes: 1, maxTailBytes: 64 * 1024 * 1024 },
    });
    await trimming.startConsumer(tenant, flow, {
      pollIntervalMs: 20,
      checkpointEvery: 1,
      handler: async (msg) => {
        out(`got ${msg.id}`);
        await new Promise((r) => setTimeout(r, 1));
        return { kind: 'ack' };
      },
    });
    for (;;) {
      for (const r of (await trimming.compact()).queues) if (r.result === 'trimmed') out('trimmed');
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  throw new Error(`unknown mode ${mode}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});

/**
 * The yardstick of the PostgreSQL /enqueue benchmark: pg-boss `send` (one durable INSERT per job,
 * each its own commit) from the bench process, with as many sends in flight as autocannon holds
 * connections, over the same database as the service's store.
 */
import { PgBoss } from 'pg-boss';
import type { LoadResult } from './load.js';

export interface BossSender {
  /** Sends for `durationSec` seconds with `inFlight` sends outstanding at all times; completed sends per second. */
  round(label: string, inFlight: number, durationSec: number): Promise<LoadResult>;
  /** Stops pg-boss and drops its schema (also when stopping fails). */
  close(): Promise<void>;
}

export interface BossSenderOptions {
  /** The database, without a `schema` parameter. */
  readonly connectionString: string;
  /** pg-boss's schema of its own, created by start() and dropped by close(). */
  readonly schema: string;
  /** The pg-boss queue the jobs go to. */
  readonly queue: string;
  /** The job data, the /enqueue body parsed. */
  readonly data: object;
  /** Drops the schema; given by the caller, which owns the database connection. */
  readonly dropSchema: (schema: string) => Promise<void>;
}

/** pg-boss 12, started with its defaults (a pool of 10 connections, the service's own default). */
export async function startBossSender(o: BossSenderOptions): Promise<BossSender> {
  const boss = new PgBoss({ connectionString: o.connectionString, schema: o.schema });
  // Without a listener an 'error' event (a maintenance query that failed) would end the bench.
  boss.on('error', (err: Error) => process.stderr.write(`pg-boss: ${err.message}\n`));
  await boss.start();
  await boss.createQueue(o.queue);
  return {
    round: (label, inFlight, durationSec) => sendRound(boss, o, label, inFlight, durationSec),
    close: async () => {
      try {
        await boss.stop({ graceful: false }); // resolves once stopped (pg-boss 11 dropped the `wait` option)
      } finally {
        await o.dropSchema(o.schema);
      }
    },
  };
}

async function sendRound(
  boss: PgBoss,
  o: BossSenderOptions,
  label: string,
  inFlight: number,
  durationSec: number,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  const end = t0 + durationSec * 1000;
  const lane = async (): Promise<void> => {
    while (performance.now() < end) {
      const start = performance.now();
      try {
        if ((await boss.send(o.queue, o.data)) === null) errors++;
        else latencies.push(performance.now() - start);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const p99 =
    latencies.length === 0 ? 0 : latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!;
  return { label, reqPerSec: latencies.length / seconds, p99Ms: Math.round(p99), non2xx: 0, errors };
}

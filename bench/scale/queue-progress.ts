/**
 * How far a queue's worker has got, read from the tail of its consumer log: the last checkpoint
 * record holds `n`, the messages passed since the last drain. The worker writes one every 64
 * acknowledgements and whenever it catches up, so this reads a few KiB whatever the backlog, where
 * `svc`'s own counters (readQueueStats) scan the segment from the checkpoint on every call.
 */
import { open } from 'node:fs/promises';
import { openDb, type Db } from '../../src/store/sqlite/db.js';
import { logMigrations } from '../../src/store/sqlite/migrations/log.js';
import { decodeFrames, FRAME_MAGIC } from '../../src/queue/file/frame.js';
import type { ConsumerLogRecord } from '../../src/queue/file/consumer-log.js';

const TAIL_BYTES = 8192;

/** Messages the checkpoint has passed; 0 when the queue has no consumer log yet. */
export async function checkpointedCount(consumerLogPath: string): Promise<number> {
  let fh;
  try {
    fh = await open(consumerLogPath, 'r');
  } catch {
    return 0;
  }
  try {
    const size = (await fh.stat()).size;
    const start = Math.max(0, size - TAIL_BYTES);
    const buf = Buffer.alloc(size - start);
    await fh.read(buf, 0, buf.length, start);
    // Records are framed; the first whole frame of the tail starts at some magic number.
    const magic = Buffer.alloc(4);
    magic.writeUInt32LE(FRAME_MAGIC, 0);
    for (let at = buf.indexOf(magic); at >= 0; at = buf.indexOf(magic, at + 1)) {
      const { frames } = decodeFrames<ConsumerLogRecord>(buf.subarray(at));
      if (frames.length === 0) continue;
      let n = 0;
      for (const f of frames) if (f.value.t === 'ck') n = f.value.ck.n;
      return n;
    }
    return 0;
  } finally {
    await fh.close();
  }
}

/** The event log's view of a drain: how many queue deliveries it holds (one query, however many queues). */
export class LogProgress {
  readonly #path: string;
  #db: Db | undefined;

  constructor(logDbPath: string) {
    this.#path = logDbPath;
  }

  /** queue_processed rows written so far (0 before the server made the file). */
  processed(): number {
    const db = this.#open();
    if (db === undefined) return 0;
    return (db.prepare("SELECT count(*) AS n FROM events WHERE event = 'queue_processed'").get() as { n: number }).n;
  }

  close(): void {
    this.#db?.close();
    this.#db = undefined;
  }

  #open(): Db | undefined {
    try {
      this.#db ??= openDb(this.#path, logMigrations, { readonly: true });
    } catch {
      return undefined;
    }
    return this.#db;
  }
}

/** Where event rows end up: the log database and the daily JSON Lines files, written together. */
import { EventLogRepo } from './event-log-repo.js';
import { DailyJsonlWriter } from './event-log-files.js';
import type { RowColumns } from './event-log-row.js';

export interface WorkerSetup {
  logDb: string;
  logsDir: string;
  prefix: string;
}

/** A write carries a packed batch (see `packEventRow`). */
export type WorkerRequest = { type: 'write'; id: number; batch: RowColumns } | { type: 'close'; id: number };
export interface WorkerReply {
  id: number;
  error: string | undefined;
}

export class EventLogSink {
  readonly #repo: EventLogRepo;
  readonly #files: DailyJsonlWriter;
  /** Batches are written strictly in order, one after the other. */
  #tail: Promise<void> = Promise.resolve();

  constructor(setup: WorkerSetup) {
    this.#repo = EventLogRepo.open(setup.logDb);
    this.#files = new DailyJsonlWriter(setup.logsDir, setup.prefix);
  }

  /** One transaction for the packed batch, then one append per day touched; batches never interleave. */
  write(batch: Readonly<RowColumns>): Promise<void> {
    const next = this.#tail.then(() => this.#write(batch));
    this.#tail = next.catch(() => undefined);
    return next;
  }

  async #write(batch: Readonly<RowColumns>): Promise<void> {
    let dbError: unknown;
    try {
      this.#repo.insertColumns(batch);
    } catch (err) {
      dbError = err;
    }
    // The file is written even when the database refused, so the rows survive somewhere.
    await this.#files.write(batch);
    if (dbError !== undefined) throw dbError;
  }

  async close(): Promise<void> {
    await this.#tail;
    try {
      await this.#files.close();
    } finally {
      this.#repo.close();
    }
  }
}

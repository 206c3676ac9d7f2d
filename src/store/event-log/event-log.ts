/**
 * The structured event log writer. `emit` masks and serialises the event into a flat batch of
 * column values (no object per event outlives the call, so a request's body and output are not
 * kept alive until the batch is written); every few milliseconds (or every N rows) the batch goes
 * to a worker thread, which writes it in one SQLite transaction plus one buffered append per daily
 * JSON Lines file. With a PostgreSQL store (`pg`) the batch is one multi-row INSERT on the calling
 * thread instead (store/event-log/pg-event-writer.ts), the daily files beside it when `logsDir` is given.
 * The request path never waits on a commit or an fsync. `flush()` waits for everything emitted so
 * far; `close()` flushes and stops.
 */
import { Worker } from 'node:worker_threads';
import { Settings } from '../../common/settings.js';
import type { EventLogBackend, RowRetentionRequest, RowRetentionStats } from './batch-writer.js';
import { EventLogSink, type WorkerReply, type WorkerRequest, type WorkerSetup } from './event-log-sink.js';
import { isoMillis } from '../../common/clock.js';
import type { EventEmitter } from './event-sink.js';
import type { Aggregates, QueueSample, RollupRow } from '../contracts/rollups.js';
import { packEventRow, ROW_WIDTH, type LogEventInput, type RowColumns } from './event-log-row.js';
import type { PgDb } from '../pg/pg-db.js';
import { PgEventWriter } from './pg-event-writer.js';

export {
  EVENT_KINDS,
  BOUNDARY_EVENTS,
  TRACE_EVENTS,
  toEventRow,
  type EventKind,
  type LogEventInput,
  type EventRow,
} from './event-log-row.js';
export { SqliteEventLogStore } from '../sqlite/sqlite-event-log-store.js';
export type { EventLogStore, EventQuery, StoredEvent } from '../contracts/index.js';
export type { EventLogBackend, RowRetentionRequest, RowRetentionStats } from './batch-writer.js';
export { NULL_EVENTS, type EventEmitter } from './event-sink.js';

/** How the writer batches and reports, whichever database it writes to. */
export interface EventLogTuning {
  /** Daily file name prefix: `<prefix>-YYYY-MM-DD.jsonl`. @default 'events' */
  prefix?: string;
  /** Longest a row waits in memory before its batch is written, in ms. @default 5 */
  flushIntervalMs?: number;
  /** Rows that trigger an immediate batch. @default 256 */
  maxBatchRows?: number;
  /**
   * Rows of a batch handed to the writer at a time, ahead of the batch's end (the writer holds them
   * and writes the whole batch at once). Keeps the array the request path appends to small.
   * @default CHUNK_ROWS
   */
  chunkRows?: number;
  /** Current `log_payload_max_bytes` (read per batch, the setting is per-request). @default 4096 */
  payloadMaxBytes?: () => number;
  /** SQLite: write on the calling thread instead of a worker thread (tools, tests). PostgreSQL always writes on the calling thread (its client is asynchronous). @default false */
  inline?: boolean;
  /**
   * Called when a batch could not be written (a full disk, say), with a message counting the rows
   * lost in it and since start; the rows are not kept (`droppedRows` counts them). @default writes a line to stderr
   */
  onError?: (err: Error) => void;
  /** Told of each batch written: its rows and the time from hand-over to written, in seconds (metrics). */
  onBatchWritten?: (rows: number, seconds: number) => void;
  /** Rows held unwritten past which a new batch is dropped (and counted). @default MAX_HELD_ROWS */
  maxHeldRows?: number;
}

/** Rows go to `log.db` and the daily files of `logsDir`. */
export interface SqliteEventLogTarget {
  /** Path of `log.db` (see `statePaths().logDb`). */
  logDb: string;
  /** Directory of the daily files (see `statePaths().logsDir`). */
  logsDir: string;
  pg?: undefined;
}

/** Rows go to the PostgreSQL store's `events` table, and to the daily files when `logsDir` is given (a per-node option). */
export interface PgEventLogTarget {
  /** The store's pool (PgStore.db); the writer never closes it. */
  pg: PgDb;
  /** Directory of the daily files of this node. @default none: no files */
  logsDir?: string;
  logDb?: undefined;
}

export type EventLogOptions = EventLogTuning & (SqliteEventLogTarget | PgEventLogTarget);

/**
 * Rows a writer may hold unwritten (a PostgreSQL outage: its batches wait for the database); past
 * it a new batch is dropped, counted and reported, so an outage cannot take the process's memory.
 * About 30 to 60 MB of rows.
 */
export const MAX_HELD_ROWS = 100_000;

/**
 * Rows handed over at a time within a batch. An array of more than about 1,100 rows (14 columns)
 * is too large for V8's young generation: each time it grows, a new one is made in the
 * large-object space and its pages faulted in. Measured (2 vCPU, Node 24): appending and handing
 * over rows costs 0.7 us a row in 512-row arrays against 1.7 to 2.5 us in one 4,096-row array.
 */
export const CHUNK_ROWS = 512;

/** How often a running retention pass asks `stopping()`. Milliseconds. */
const RETENTION_STOP_POLL_MS = 100;

/** States: `running` accepts events; `closing` drains; `closed` drops further events. */
export type EventLogState = 'running' | 'closing' | 'closed';

export class EventLog implements EventEmitter {
  #state: EventLogState = 'running';
  #batch: RowColumns = [];
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #inFlight = new Set<Promise<void>>();
  #dropped = 0;
  #closePromise: Promise<void> | undefined;
  readonly #backend: EventLogBackend;
  readonly #intervalMs: number;
  readonly #maxRows: number;
  readonly #payloadMaxBytes: () => number;
  readonly #onError: (err: Error) => void;
  readonly #onBatchWritten: ((rows: number, seconds: number) => void) | undefined;
  /** Rows handed to the writer (staged chunks included) and not yet written or dropped. */
  #inFlightRows = 0;
  /** Rows of the open batch already staged with the writer (see CHUNK_ROWS). */
  #stagedRows = 0;
  readonly #chunkRows: number;
  readonly #maxHeldRows: number;

  constructor(opts: EventLogOptions) {
    const prefix = opts.prefix ?? 'events';
    if (opts.pg !== undefined) {
      this.#backend = new PgEventWriter(opts.pg, { logsDir: opts.logsDir, prefix });
    } else {
      const setup: WorkerSetup = { logDb: opts.logDb, logsDir: opts.logsDir, prefix };
      this.#backend = opts.inline ? new InlineBackend(setup) : new WorkerBackend(setup);
    }
    this.#intervalMs = opts.flushIntervalMs ?? 5;
    this.#maxRows = opts.maxBatchRows ?? 256;
    this.#chunkRows = Math.max(1, opts.chunkRows ?? CHUNK_ROWS);
    const defaultMax = Settings.log_payload_max_bytes.defaultValue();
    this.#payloadMaxBytes = opts.payloadMaxBytes ?? (() => defaultMax);
    this.#onError = opts.onError ?? ((err) => process.stderr.write(`event log: batch not written: ${err.message}\n`));
    this.#onBatchWritten = opts.onBatchWritten;
    this.#maxHeldRows = opts.maxHeldRows ?? MAX_HELD_ROWS;
  }

  /** The service's event log: `log.db` and `logs/<prefix>-YYYY-MM-DD.jsonl` of a state directory. */
  static open(paths: { logDb: string; logsDir: string }, opts: EventLogTuning = {}): EventLog {
    return new EventLog({ ...opts, logDb: paths.logDb, logsDir: paths.logsDir });
  }

  get state(): EventLogState {
    return this.#state;
  }

  /** Rows emitted but never written since start (their batch failed). */
  get droppedRows(): number {
    return this.#dropped;
  }

  /** Rows emitted and not yet written: waiting for their batch, or in a batch being written. */
  get queuedRows(): number {
    return Math.floor(this.#batch.length / ROW_WIDTH) + this.#inFlightRows;
  }

  /** Queues one event, masked and serialised at once (no I/O). */
  emit(event: LogEventInput): void {
    if (this.#state === 'closed') return;
    try {
      packEventRow(this.#batch, event, event.ts ?? isoMillis(Date.now()), this.#payloadMaxBytes);
    } catch (err) {
      this.#onError(err as Error);
      return;
    }
    const rows = this.#batch.length / ROW_WIDTH;
    if (this.#stagedRows + rows >= this.#maxRows) {
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        this.#writeBatch();
      });
      return;
    }
    if (rows >= this.#chunkRows) this.#stageChunk();
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#writeBatch();
      }, this.#intervalMs);
      this.#timer.unref();
    }
  }

  /** Resolves once every event emitted before the call is in the database and the files. */
  async flush(): Promise<void> {
    // Events emitted while a batch is being written are picked up by the next round.
    do {
      this.#writeBatch();
      while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    } while (this.#batch.length > 0 && this.#state !== 'closed');
  }

  /**
   * Deletes the rows older than `request.cutoffIso` and gives the freed pages back to the file
   * system, on the writer's thread and connection, in slices between its batches (see
   * EventLogSink.retain). `stopping` is asked every 100 ms; true ends the pass at its next slice.
   */
  async retainRows(request: RowRetentionRequest, stopping: () => boolean = () => false): Promise<RowRetentionStats> {
    const pass = this.#backend.retain(request);
    const ask = () => {
      if (stopping()) this.#backend.stopRetention();
    };
    ask(); // already stopping: the pass ends after its first slice
    const poll = setInterval(ask, RETENTION_STOP_POLL_MS);
    poll.unref();
    try {
      return await pass;
    } finally {
      clearInterval(poll);
    }
  }

  /**
   * Adds per-minute rollups (contracts/rollups.ts) to the store's, on the writer's thread and
   * connection, after the batches handed over before them; flush() and close() wait for them. A
   * failure is reported like a lost batch, never thrown at the caller.
   */
  writeRollups(rows: RollupRow[]): void {
    this.#writeAggregates({ rollups: rows }, `${rows.length} rollup row(s)`);
  }

  /** Queue figures sampled this minute (contracts/rollups.ts QueueSample), written as the rollups are. */
  writeQueueSamples(samples: QueueSample[]): void {
    this.#writeAggregates({ queueSamples: samples }, `${samples.length} queue sample(s)`);
  }

  #writeAggregates(a: Aggregates, what: string): void {
    if ((a.rollups?.length ?? 0) + (a.queueSamples?.length ?? 0) === 0 || this.#state === 'closed') return;
    const p: Promise<void> = this.#backend.writeAggregates(a).catch((err: Error) => {
      this.#onError(new Error(`${what} not written: ${err.message}`, { cause: err }));
    });
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /** Flushes, then closes the database and the files. Runs once; later calls return the same promise. */
  close(): Promise<void> {
    this.#closePromise ??= (async () => {
      this.#state = 'closing';
      this.#backend.closing?.();
      try {
        await this.flush();
      } finally {
        this.#state = 'closed';
        await this.#backend.close().catch((err: Error) => this.#onError(err));
      }
    })();
    return this.#closePromise;
  }

  /** Hands the rows gathered so far to the writer, to be written with the rest of their batch. */
  #stageChunk(): void {
    const chunk = this.#batch;
    this.#batch = [];
    const rows = chunk.length / ROW_WIDTH;
    if (!this.#mayHold(rows)) return;
    this.#inFlightRows += rows;
    this.#stagedRows += rows;
    this.#backend.stage(chunk);
  }

  /** False (the rows dropped, counted and reported) when holding `rows` more would pass the limit. */
  #mayHold(rows: number): boolean {
    if (this.#inFlightRows + rows <= this.#maxHeldRows) return true;
    this.#dropped += rows;
    this.#onError(
      new Error(
        `${rows} event row(s) not written (${this.#dropped} lost since start): ${this.#inFlightRows} rows are already held for the database`,
      ),
    );
    return false;
  }

  #writeBatch(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
    if ((this.#batch.length === 0 && this.#stagedRows === 0) || this.#state === 'closed') return;
    let batch = this.#batch;
    this.#batch = [];
    let lastRows = Math.floor(batch.length / ROW_WIDTH);
    if (!this.#mayHold(lastRows)) {
      // The rows staged before it are held already: they are still written, as their own batch.
      if (this.#stagedRows === 0) return;
      batch = [];
      lastRows = 0;
    }
    const rows = this.#stagedRows + lastRows;
    this.#inFlightRows += lastRows;
    this.#stagedRows = 0;
    const started = performance.now();
    const p: Promise<void> = this.#backend.write(batch).then(
      () => {
        this.#inFlightRows -= rows;
        this.#onBatchWritten?.(rows, (performance.now() - started) / 1000);
      },
      (err: Error) => {
        // Never silent: the loss is counted and reported with the batch's size and the total so far.
        this.#inFlightRows -= rows;
        this.#dropped += rows;
        this.#onError(
          new Error(`${rows} event row(s) not written (${this.#dropped} lost since start): ${err.message}`, {
            cause: err,
          }),
        );
      },
    );
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }
}

/** Writes on the calling thread (tools, tests). */
class InlineBackend implements EventLogBackend {
  readonly #sink: EventLogSink;

  constructor(setup: WorkerSetup) {
    this.#sink = new EventLogSink(setup);
  }

  stage(chunk: RowColumns): void {
    this.#sink.stage(chunk);
  }

  write(batch: RowColumns): Promise<void> {
    return this.#sink.write(batch);
  }

  writeAggregates(a: Aggregates): Promise<void> {
    return this.#sink.writeAggregates(a);
  }

  retain(request: RowRetentionRequest): Promise<RowRetentionStats> {
    return this.#sink.retain(request);
  }

  stopRetention(): void {
    this.#sink.stopRetention();
  }

  close(): Promise<void> {
    return this.#sink.close();
  }
}

/** Talks to event-log-worker.js; keeps the process alive only while a request is outstanding. */
class WorkerBackend implements EventLogBackend {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (reply: WorkerReply) => void; reject: (err: Error) => void }>();
  #nextId = 1;

  constructor(setup: WorkerSetup) {
    this.#worker = new Worker(new URL('./event-log-worker.js', import.meta.url), { workerData: setup });
    this.#worker.unref();
    this.#worker.on('message', (reply: WorkerReply) => {
      const waiter = this.#pending.get(reply.id);
      if (waiter === undefined) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) this.#worker.unref();
      if (reply.error === undefined) waiter.resolve(reply);
      else waiter.reject(new Error(reply.error));
    });
    this.#worker.on('error', (err) => this.#failAll(err));
    this.#worker.on('exit', () => this.#failAll(new Error('event log worker exited')));
  }

  stage(chunk: RowColumns): void {
    // Not answered: the write after it reports the batch. Cloned here, so the caller's array is free.
    this.#worker.postMessage({ type: 'stage', id: this.#nextId++, chunk } satisfies WorkerRequest);
  }

  async write(batch: RowColumns): Promise<void> {
    await this.#request({ type: 'write', id: this.#nextId++, batch });
  }

  async writeAggregates(aggregates: Aggregates): Promise<void> {
    await this.#request({ type: 'aggregates', id: this.#nextId++, aggregates });
  }

  async retain(request: RowRetentionRequest): Promise<RowRetentionStats> {
    const reply = await this.#request({ type: 'retain', id: this.#nextId++, request });
    if (reply.retention === undefined)
      throw new Error('event log worker answered a retention pass without its figures');
    return reply.retention;
  }

  stopRetention(): void {
    // Not answered: nothing waits for it, and it must not hold the process open.
    this.#worker.postMessage({ type: 'stop-retention', id: this.#nextId++ } satisfies WorkerRequest);
  }

  async close(): Promise<void> {
    await this.#request({ type: 'close', id: this.#nextId++ });
    await this.#worker.terminate();
  }

  #request(msg: WorkerRequest): Promise<WorkerReply> {
    return new Promise((resolve, reject) => {
      this.#pending.set(msg.id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage(msg);
    });
  }

  #failAll(err: Error): void {
    for (const w of this.#pending.values()) w.reject(err);
    this.#pending.clear();
  }
}

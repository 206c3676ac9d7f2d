/** Daily JSON Lines files `logs/<prefix>-YYYY-MM-DD.jsonl`, appended through buffered streams. */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { jsonLineAt, ROW_WIDTH, type RowColumns } from './event-log-row.js';

export class DailyJsonlWriter {
  readonly #dir: string;
  readonly #prefix: string;
  #day: string | undefined;
  #stream: WriteStream | undefined;

  /** @param dir the logs directory (created on first write) @param prefix file name prefix, e.g. `events` */
  constructor(dir: string, prefix: string) {
    this.#dir = dir;
    this.#prefix = prefix;
  }

  /** The file a row of day `YYYY-MM-DD` goes to. */
  fileFor(day: string): string {
    return join(this.#dir, `${this.#prefix}-${day}.jsonl`);
  }

  /** Appends the rows of a packed batch (grouped by their UTC day); resolves when the stream has taken the bytes. */
  async write(flat: Readonly<RowColumns>): Promise<void> {
    let i = 0;
    while (i + ROW_WIDTH <= flat.length) {
      const day = (flat[i] as string).slice(0, 10);
      let text = '';
      for (; i + ROW_WIDTH <= flat.length && (flat[i] as string).startsWith(day); i += ROW_WIDTH) text += jsonLineAt(flat, i);
      await this.#append(day, text);
    }
  }

  #append(day: string, text: string): Promise<void> {
    // A stream that failed (a full disk) is destroyed: the next batch opens a fresh one.
    if (this.#day !== day || this.#stream === undefined || this.#stream.destroyed) {
      if (this.#stream?.destroyed === false) this.#stream.end();
      mkdirSync(this.#dir, { recursive: true });
      const stream = createWriteStream(this.fileFor(day), { flags: 'a' });
      // A failed write reaches its callback below and the batch reports it; without a listener the
      // stream's 'error' event would be an uncaught exception that kills the writer thread.
      stream.on('error', () => undefined);
      this.#stream = stream;
      this.#day = day;
    }
    const stream = this.#stream;
    return new Promise((resolve, reject) => stream.write(text, (err) => (err ? reject(err) : resolve())));
  }

  /** Ends the current stream once its buffered bytes are written. */
  close(): Promise<void> {
    const stream = this.#stream;
    this.#stream = undefined;
    this.#day = undefined;
    if (stream === undefined || stream.destroyed) return Promise.resolve();
    return new Promise((resolve) => stream.end(() => resolve()));
  }
}

/** Daily JSON Lines files `logs/<prefix>-YYYY-MM-DD.jsonl`, appended through buffered streams. */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { rowToJsonLine, type EventRow } from './event-log-row.js';

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

  /** Appends the rows (grouped by their UTC day); resolves when the stream has taken the bytes. */
  async write(rows: readonly EventRow[]): Promise<void> {
    let i = 0;
    while (i < rows.length) {
      const day = rows[i]!.ts.slice(0, 10);
      let text = '';
      while (i < rows.length && rows[i]!.ts.slice(0, 10) === day) text += rowToJsonLine(rows[i++]!);
      await this.#append(day, text);
    }
  }

  #append(day: string, text: string): Promise<void> {
    if (this.#day !== day || this.#stream === undefined) {
      this.#stream?.end();
      mkdirSync(this.#dir, { recursive: true });
      this.#stream = createWriteStream(this.fileFor(day), { flags: 'a' });
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
    if (stream === undefined) return Promise.resolve();
    return new Promise((resolve) => stream.end(() => resolve()));
  }
}

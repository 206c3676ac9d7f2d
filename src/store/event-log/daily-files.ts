/** Daily JSON Lines files `logs/<prefix>-YYYY-MM-DD.jsonl`, appended through buffered streams. */
import {
  closeSync,
  createWriteStream,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  type WriteStream,
} from 'node:fs';
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
      for (; i + ROW_WIDTH <= flat.length && (flat[i] as string).startsWith(day); i += ROW_WIDTH)
        text += jsonLineAt(flat, i);
      await this.#append(day, text);
    }
  }

  #append(day: string, text: string): Promise<void> {
    // A stream that failed (a full disk) is destroyed: the next batch opens a fresh one.
    if (this.#day !== day || this.#stream === undefined || this.#stream.destroyed) {
      if (this.#stream?.destroyed === false) this.#stream.end();
      // Its batch was reported lost; what of it reached the file ends in a line cut short, which
      // would swallow the next row written after it.
      if (this.#stream?.destroyed === true && this.#day !== undefined) cutPartialLine(this.fileFor(this.#day));
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
    if (stream === undefined || stream.closed) return Promise.resolve();
    // A stream destroyed by a failed write closes its file a moment later: wait for that too, so
    // nothing is left open once the writer is closed.
    if (stream.destroyed) return new Promise((resolve) => stream.once('close', () => resolve()));
    return new Promise((resolve) => stream.end(() => resolve()));
  }
}

/** Cuts an unfinished last line (bytes after the last newline) off `path`; a missing file has none. */
function cutPartialLine(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch {
    return;
  }
  try {
    const size = fstatSync(fd).size;
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      const n = readSync(fd, chunk, 0, end - start, start);
      const newline = chunk.subarray(0, n).lastIndexOf(0x0a);
      if (newline >= 0) {
        end = start + newline + 1;
        break;
      }
      end = start;
    }
    if (end < size) ftruncateSync(fd, end);
  } finally {
    closeSync(fd);
  }
}

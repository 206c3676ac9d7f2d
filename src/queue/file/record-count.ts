/**
 * The number of whole records in a segment, kept between calls so that each call reads only what
 * was appended since: the queue figures (`/metrics`, `svc queue` listings) counted the pending
 * records by reading the segment from the checkpoint on every call, a 145 MB read per scrape with
 * a 1,000,000-message backlog.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { firstRecordId } from './consumer-log.js';
import { isErrno, scanHandle } from './file-io.js';

export class SegmentRecordCount {
  #ino = -1;
  #firstId: number | undefined;
  /** Offset just past the last record counted. */
  #countedEnd = 0;
  #records = 0;

  /**
   * Whole records in the segment at `path` now (0 when it does not exist). Counting starts over
   * when the file is another (a new inode), shorter than what was counted, or starts with another
   * record: a drain empties it in place, and ids are never reissued, so a refilled segment differs.
   */
  async records(path: string): Promise<number> {
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
      this.#reset(-1, undefined);
      return 0;
    }
    try {
      const { ino, size } = await fh.stat();
      const firstId = size > 0 ? await firstRecordId(fh) : undefined;
      if (ino !== this.#ino || size < this.#countedEnd || firstId !== this.#firstId) this.#reset(ino, firstId);
      if (size > this.#countedEnd) {
        // Checksums only: the records' JSON is not needed to count them.
        const scan = await scanHandle(fh, this.#countedEnd, () => this.#records++, false);
        this.#countedEnd = scan.validEnd;
      }
      return this.#records;
    } finally {
      await fh.close();
    }
  }

  #reset(ino: number, firstId: number | undefined): void {
    this.#ino = ino;
    this.#firstId = firstId;
    this.#countedEnd = 0;
    this.#records = 0;
  }
}

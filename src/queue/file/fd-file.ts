/**
 * A queue file used by its descriptor: opened (when it exists) and closed on the calling thread,
 * while what waits for the disk (fdatasync, a large read) still goes to libuv's pool.
 *
 * Why: a worker of the pool opens and closes its queue's files each time it gets and gives back a
 * slot. Measured on this project's 2-vCPU VM, an open and close of an existing file cost 6.8 us of
 * event-loop time on this thread against 30 to 39 us through the pool (each call hands work over
 * and wakes a pool thread, which competes for the second core). A file that must be created is
 * created by the pool: creating one cost 0.5 to 1 ms here.
 */
import { closeSync, constants, fdatasync, ftruncateSync, open as openCb, openSync, read as readCb } from 'node:fs';
import { isErrno } from '../../common/errno.js';

/** What the reading helpers of file-io.ts need of an open file (a FileHandle has it too). */
export interface ReadableFile {
  readonly fd: number;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
}

/** How a file is opened: for reading, or for reading and appending (created if missing). */
export type FdFileMode = 'read' | 'append';

const FLAGS: Record<FdFileMode, number> = {
  read: constants.O_RDONLY,
  append: constants.O_RDWR | constants.O_APPEND,
};

export class FdFile implements ReadableFile {
  readonly path: string;
  #fd: number;
  /** Reads and syncs in the pool now: the descriptor is closed only once they are done (its number could be reused). */
  #inPool = 0;
  #closeWhenIdle = false;

  private constructor(path: string, fd: number) {
    this.path = path;
    this.#fd = fd;
  }

  /**
   * Opens `path`. An existing file is opened on this thread; a missing one is created by the pool
   * in `append` mode, and is ENOENT in `read` mode.
   */
  static async open(path: string, mode: FdFileMode): Promise<FdFile> {
    try {
      return new FdFile(path, openSync(path, FLAGS[mode]));
    } catch (err) {
      if (mode === 'read' || !isErrno(err, 'ENOENT')) throw err;
    }
    const fd = await new Promise<number>((resolve, reject) =>
      openCb(path, FLAGS.append | constants.O_CREAT, 0o644, (err, fd) => (err ? reject(err) : resolve(fd))),
    );
    return new FdFile(path, fd);
  }

  /** The descriptor; -1 once closed. */
  get fd(): number {
    return this.#fd;
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return this.#pool<{ bytesRead: number }>((fd, done) =>
      readCb(fd, buffer, offset, length, position, (err, bytesRead) => done(err, { bytesRead })),
    );
  }

  /** fdatasync, by the pool: it waits for the disk. */
  datasync(): Promise<void> {
    return this.#pool<void>((fd, done) => fdatasync(fd, (err) => done(err, undefined)));
  }

  #pool<T>(call: (fd: number, done: (err: Error | null, value: T) => void) => void): Promise<T> {
    if (this.#fd < 0 || this.#closeWhenIdle)
      return Promise.reject(Object.assign(new Error(`${this.path} is closed`), { code: 'EBADF' }));
    this.#inPool++;
    return new Promise<T>((resolve, reject) =>
      call(this.#fd, (err, value) => {
        if (--this.#inPool === 0 && this.#closeWhenIdle) {
          try {
            this.#closeNow();
          } catch {
            // Nothing to report it to: the close was asked for long ago.
          }
        }
        if (err) reject(err);
        else resolve(value);
      }),
    );
  }

  truncateSync(length: number): void {
    ftruncateSync(this.#fd, length);
  }

  /**
   * Closes the descriptor on this thread (no disk wait: a close flushes nothing), or as soon as the
   * reads and syncs in the pool are done. Safe to call twice.
   */
  close(): void {
    if (this.#fd < 0 || this.#closeWhenIdle) return;
    if (this.#inPool > 0) this.#closeWhenIdle = true;
    else this.#closeNow();
  }

  #closeNow(): void {
    const fd = this.#fd;
    this.#fd = -1;
    closeSync(fd);
  }
}

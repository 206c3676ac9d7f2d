/**
 * Low-level file helpers for the queue: whole-file frame scans, full writes, atomic replacement.
 *
 * The `...Sync` helpers are for small page-cache reads and writes on the event loop. Measured on a
 * 2-vCPU VM: a write through the libuv pool cost 60-85 us round trip and 6-22 us of event-loop
 * time just to hand over (more under load, when the pool's threads wait for a CPU), against 1.4-2.3
 * us for writeSync. Nothing that waits for the disk (fsync, fdatasync, an O_DSYNC write, a large
 * read) goes through them.
 */
import { fstatSync, readSync, writeSync } from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isErrno } from '../../common/errno.js';
import { decodeFrames, type Frame, type StopReason } from './frame.js';
import type { ReadableFile } from './fd-file.js';

export { isErrno };

/** Bytes read per step while scanning (1 MiB). */
export const SCAN_CHUNK_BYTES = 1024 * 1024;

export interface ScanResult<T> {
  readonly frames: Frame<T>[];
  /** File position just past the last valid record. */
  readonly validEnd: number;
  /** File size when the scan ended. */
  readonly size: number;
  /** Why the scan stopped before `size` (`end` when the whole file was valid). */
  readonly stop: StopReason;
}

/** Reads up to `length` bytes at `position` (fewer at end of file). */
export async function readAt(fh: ReadableFile, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/** Largest read done synchronously on the event loop; above it, the pool does the read. */
export const SYNC_READ_MAX_BYTES = 64 * 1024;

/** `readAt` on the calling thread, for reads up to SYNC_READ_MAX_BYTES of a file just written. */
export function readAtSync(fh: { readonly fd: number }, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fh.fd, buf, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/** The file's size, asked on the calling thread (fstat answers from the inode, no disk wait). */
export function sizeSync(fh: { readonly fd: number }): number {
  return fstatSync(fh.fd).size;
}

/** `writeAll` on the calling thread: for small appends to the page cache, synced separately. */
export function writeAllSync(fh: { readonly fd: number }, buf: Buffer): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fh.fd, buf, done, buf.length - done);
}

/**
 * Reads the valid records from `from` up to the end of the file; `onFrame`, when given, receives
 * each record instead of collecting them (so big files are counted without holding them). With
 * `parse` false the records' JSON is not parsed (decodeFrames): each frame's `value` is undefined.
 */
export async function scanHandle<T>(
  fh: ReadableFile,
  from = 0,
  onFrame?: (f: Frame<T>) => void,
  parse = true,
): Promise<ScanResult<T>> {
  const size = sizeSync(fh);
  const frames: Frame<T>[] = [];
  let pos = from;
  let chunk = SCAN_CHUNK_BYTES;
  while (pos < size) {
    // A small file (a consumer log, a queue's short segment) in one read on this thread: a worker
    // of the pool opens a queue's files each time it gets a slot.
    const len = Math.min(chunk, size - pos);
    const buf = len <= SYNC_READ_MAX_BYTES ? readAtSync(fh, pos, len) : await readAt(fh, pos, len);
    const r = decodeFrames<T>(buf, pos, parse);
    for (const f of r.frames) {
      if (onFrame) onFrame(f);
      else frames.push(f);
    }
    pos += r.validBytes;
    if (r.stop === 'corrupt') return { frames, validEnd: pos, size, stop: 'corrupt' };
    if (r.stop === 'incomplete' && r.validBytes === 0) {
      // No progress: the record here is longer than the chunk (read again with room for it)
      // or is cut short by the end of the file.
      const need = r.needBytes;
      if (need !== undefined && need > buf.length && pos + need <= size) {
        chunk = need;
        continue;
      }
      return { frames, validEnd: pos, size, stop: 'incomplete' };
    }
  }
  return { frames, validEnd: pos, size, stop: 'end' };
}

/** `scanHandle` on a path; a missing file reads as empty. */
export async function scanFile<T>(path: string, from = 0, onFrame?: (f: Frame<T>) => void): Promise<ScanResult<T>> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { frames: [], validEnd: 0, size: 0, stop: 'end' };
    throw err;
  }
  try {
    return await scanHandle<T>(fh, from, onFrame);
  } finally {
    await fh.close();
  }
}

/** Writes all of `buf` (a regular-file write can in theory return short; loop until done). */
export async function writeAll(fh: FileHandle, buf: Buffer, position: number | null = null): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position === null ? null : position + done);
    done += bytesWritten;
  }
}

/** fsyncs a directory so a create, rename or unlink inside it survives a power loss. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Replaces `path` atomically with `data`: temp file, fdatasync, rename, directory fsync.
 * `beforeRename` runs on the same turn as the rename and may throw to cancel it (a lock fence).
 */
export async function atomicWrite(path: string, data: Buffer | string, beforeRename?: () => void): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  const fh = await open(tmp, 'w');
  try {
    await writeAll(fh, typeof data === 'string' ? Buffer.from(data) : data);
    await fh.datasync();
  } catch (err) {
    await fh.close();
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fh.close();
  try {
    beforeRename?.();
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await rename(tmp, path);
  await fsyncDir(dirname(path));
}

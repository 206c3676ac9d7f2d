/**
 * Where a segment's tail check may start. An appender opening a segment (or taking the append lock
 * over from a dead writer) must cut a torn tail before it appends; decoding the whole file for
 * that cost 5.4 s before the first /enqueue after a restart on a 145 MB backlog of 1,000,000
 * messages. The appender therefore leaves a hint beside the segment: the offset, end and id of a
 * record it wrote whole. The check then decodes only what follows that record.
 *
 * A hint is only believed once the record it names is read back at that offset, whole, with that
 * id. Message ids are never reissued, so a segment emptied and refilled since cannot pass; and a
 * JSON body cannot hold a frame header (its length field's highest byte is below 5: a control
 * character, which JSON text never holds unescaped), so a record that decodes at the offset is a real record boundary. The hint is
 * written without a sync and replaced by a rename: one lost or stale in a crash costs a longer
 * scan, one torn fails its checksum, and neither can make the check start anywhere but at a
 * record boundary.
 */
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { decodeFrames, encodeFrame } from './frame.js';
import { isErrno, readAt } from './file-io.js';
import type { SegmentRecord } from './segment-record.js';

/** A record known whole in the segment: where it starts and ends, and its id. */
export interface TailHint {
  readonly offset: number;
  readonly end: number;
  readonly id: number;
}

/** Bytes appended after the last hint before the next is written (a crash costs at most this much more reading). */
export const TAIL_HINT_EVERY_BYTES = 1024 * 1024;

/** The hint left at `path`; undefined when there is none or it does not decode whole. */
export async function readTailHint(path: string): Promise<TailHint | undefined> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  const r = decodeFrames<Partial<TailHint>>(buf);
  const v = r.stop === 'end' && r.frames.length === 1 ? r.frames[0]!.value : undefined;
  if (v === undefined || typeof v !== 'object' || v === null) return undefined;
  const { offset, end, id } = v;
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(end) || !Number.isSafeInteger(id)) return undefined;
  if (offset! < 0 || end! <= offset!) return undefined;
  return { offset: offset!, end: end!, id: id! };
}

/** Replaces the hint at `path` (a temporary file renamed over it; no sync, see above). */
export async function writeTailHint(path: string, hint: TailHint): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    await writeFile(tmp, encodeFrame({ offset: hint.offset, end: hint.end, id: hint.id }));
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/**
 * Where the tail check of the open segment `fh` (of `size` bytes) may start: the end of the
 * hinted record when it is read back there whole with its id, else 0.
 */
export async function verifiedTailStart(fh: FileHandle, size: number, hint: TailHint | undefined): Promise<number> {
  if (hint === undefined || hint.end > size) return 0;
  const buf = await readAt(fh, hint.offset, hint.end - hint.offset);
  const r = decodeFrames<SegmentRecord>(buf, hint.offset);
  const f = r.stop === 'end' && r.frames.length === 1 ? r.frames[0]! : undefined;
  return f !== undefined && f.end === hint.end && f.value?.id === hint.id ? hint.end : 0;
}

/** Record framing shared by every queue file: magic, length and CRC32 before each JSON body. */
import { crc32 } from 'node:zlib';

/** `SQF1` little-endian: marks the start of every record. */
export const FRAME_MAGIC = 0x31465153;
/** magic (4) + body length (4) + CRC32 of the body (4). */
export const FRAME_HEADER_BYTES = 12;
/** A length above this is treated as corruption rather than a record (64 MiB). */
export const FRAME_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** One decoded record and where it sits in its file. */
export interface Frame<T = unknown> {
  /** Byte position of the record's header in the file. */
  readonly offset: number;
  /** Byte position just past the record. */
  readonly end: number;
  readonly value: T;
}

/**
 * Why decoding stopped: `end` (the buffer ended on a record boundary), `incomplete` (the last
 * record is cut short: a torn tail or a write still in progress) or `corrupt` (bad magic,
 * length or checksum).
 */
export type StopReason = 'end' | 'incomplete' | 'corrupt';

export interface DecodeResult<T = unknown> {
  readonly frames: Frame<T>[];
  /** Bytes of `buf` covered by whole valid records. */
  readonly validBytes: number;
  readonly stop: StopReason;
  /** For `incomplete`: the bytes the cut-short record needs in all (header + body), when known. */
  readonly needBytes?: number;
}

/** Encodes `value` as JSON inside one frame. */
export function encodeFrame(value: unknown): Buffer {
  return encodeFrameText(JSON.stringify(value));
}

/** Frames a JSON text already made (decoding it gives back `JSON.parse(json)`). */
export function encodeFrameText(json: string): Buffer {
  const length = Buffer.byteLength(json, 'utf8');
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  out.write(json, FRAME_HEADER_BYTES, 'utf8');
  out.writeUInt32LE(FRAME_MAGIC, 0);
  out.writeUInt32LE(length, 4);
  out.writeUInt32LE(crc32(out.subarray(FRAME_HEADER_BYTES)), 8);
  return out;
}

/**
 * Decodes whole frames from `buf`, which starts at file position `baseOffset`. With `parse` false
 * each frame's header and checksum are checked but its JSON is not parsed (`value` is undefined):
 * for counting records, where the parse was most of the cost. Our writers frame only
 * JSON.stringify's output, so a frame whose checksum holds parses.
 */
export function decodeFrames<T = unknown>(buf: Buffer, baseOffset = 0, parse = true): DecodeResult<T> {
  const frames: Frame<T>[] = [];
  let pos = 0;
  while (pos < buf.length) {
    if (buf.length - pos < FRAME_HEADER_BYTES) return { frames, validBytes: pos, stop: 'incomplete' };
    if (buf.readUInt32LE(pos) !== FRAME_MAGIC) return { frames, validBytes: pos, stop: 'corrupt' };
    const len = buf.readUInt32LE(pos + 4);
    if (len > FRAME_MAX_BODY_BYTES) return { frames, validBytes: pos, stop: 'corrupt' };
    const total = FRAME_HEADER_BYTES + len;
    if (buf.length - pos < total) return { frames, validBytes: pos, stop: 'incomplete', needBytes: total };
    const body = buf.subarray(pos + FRAME_HEADER_BYTES, pos + total);
    if (crc32(body) !== buf.readUInt32LE(pos + 8)) return { frames, validBytes: pos, stop: 'corrupt' };
    let value = undefined as T;
    if (parse) {
      try {
        value = JSON.parse(body.toString('utf8')) as T;
      } catch {
        return { frames, validBytes: pos, stop: 'corrupt' };
      }
    }
    frames.push({ offset: baseOffset + pos, end: baseOffset + pos + total, value });
    pos += total;
  }
  return { frames, validBytes: pos, stop: 'end' };
}

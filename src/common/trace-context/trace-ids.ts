/**
 * Random W3C trace and span ids for when no OpenTelemetry SDK makes them. Every /run needs a trace
 * id for its log rows, so the bytes come from a pool filled by one `randomFillSync` per 256 trace
 * ids rather than one call (and one Buffer) per id.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
/** Next unused byte of the pool; POOL_BYTES means empty (filled on first use). */
let next = POOL_BYTES;

/** `bytes` fresh random bytes as lowercase hex; never all zero (an invalid id). */
function randomHex(bytes: number): string {
  for (;;) {
    if (next + bytes > POOL_BYTES) {
      randomFillSync(pool);
      next = 0;
    }
    const start = next;
    next += bytes;
    for (let i = start; i < next; i++) if (pool[i] !== 0) return pool.toString('hex', start, next);
  }
}

/** A new trace id: 16 random bytes, 32 hex digits. */
export function newTraceId(): string {
  return randomHex(16);
}

/** A new span id: 8 random bytes, 16 hex digits. */
export function newSpanId(): string {
  return randomHex(8);
}

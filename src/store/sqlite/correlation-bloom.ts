/**
 * Bloom filters of correlation ids, one per block of log rows (log.db's correlation_blooms, log
 * migration 9): a lookup by correlation id scans only the blocks whose filter may hold the id,
 * instead of the whole table (correlation ids are random, so the log keeps no index on them).
 *
 * A filter is a bit array of BLOOM_BITS_PER_ID bits per row of its block, BLOOM_PROBES probes per
 * id: about 0.8% false positives when every row of the block has its own id (fewer when a
 * delivery's rows share theirs). Probes are double hashing of two 32-bit hashes of the id's UTF-16
 * code units (FNV-1a and a second multiply-xor pass, each finished by murmur3's fmix32): cheap and
 * deterministic, so any connection, thread or process tests a filter another one wrote.
 */

/** Probes per id (k); the loops below write it as a literal (a module binding read per probe cost the writer). */
export const BLOOM_PROBES = 7;
/** Bits per row of a block (m / n): with k = 7, about 0.8% false positives. */
export const BLOOM_BITS_PER_ID = 10;

/** A filter's size in bytes for a block of `ids` rows. */
export function bloomBytes(ids: number): number {
  return Math.ceil((ids * BLOOM_BITS_PER_ID) / 8);
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A correlation id's two hashes, to test many filters for it. */
export interface BloomKey {
  readonly h1: number;
  readonly h2: number;
}

/** The two hashes of `id`: bloomAdd computes the same inline (a call here and module-level results cost it half again). */
export function bloomKey(id: string): BloomKey {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return { h1: fmix32(a), h2: fmix32(b ^ id.length) };
}

/**
 * Adds `id` to the filter `bits` (all its bytes). The probes of its hashes (h1, h2) in the filter's
 * m bits: g_i = h1 + i * h2 (mod 2^32), each scaled to [0, m) by a multiply (no division: `%` of a
 * double was the slowest step).
 */
export function bloomAdd(bits: Uint8Array, id: string): void {
  const scale = bits.length * (8 / 4294967296);
  if (scale === 0) return;
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  let g = fmix32(a);
  const step = fmix32(b ^ id.length) | 1;
  for (let i = 0; i < 7; i++) {
    const x = Math.floor((g >>> 0) * scale);
    bits[x >>> 3]! |= 1 << (x & 7);
    g = (g + step) | 0;
  }
}

/** Whether the filter `bits` may hold the id of `key` (false: it surely does not). */
export function bloomHas(bits: Uint8Array, key: BloomKey): boolean {
  const scale = bits.length * (8 / 4294967296);
  if (scale === 0) return true;
  let g = key.h1;
  const step = key.h2 | 1;
  for (let i = 0; i < 7; i++) {
    const x = Math.floor((g >>> 0) * scale);
    if ((bits[x >>> 3]! & (1 << (x & 7))) === 0) return false;
    g = (g + step) | 0;
  }
  return true;
}

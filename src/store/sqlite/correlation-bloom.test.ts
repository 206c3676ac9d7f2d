import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { BLOOM_BITS_PER_ID, BLOOM_PROBES, bloomAdd, bloomBytes, bloomHas, bloomKey } from './correlation-bloom.js';

/** The design's false-positive rate for a filter full to its size: (1 - e^(-k/(m/n)))^k. */
const DESIGN_FP = (1 - Math.exp(-BLOOM_PROBES / BLOOM_BITS_PER_ID)) ** BLOOM_PROBES;

describe('correlation Bloom filter', () => {
  it('has every id added to it, whatever the ids (no false negative)', () => {
    const ids: string[] = [];
    for (let i = 0; i < 8192; i++) ids.push(randomUUID());
    for (let i = 0; i < 4096; i++) ids.push(`req-${i}`, `c-${i * 7919}`);
    ids.push('', 'é', '😀 emoji', 'x'.repeat(1000), 'a\u0000b');
    const bits = new Uint8Array(bloomBytes(ids.length));
    for (const id of ids) bloomAdd(bits, id);
    for (const id of ids) assert.equal(bloomHas(bits, bloomKey(id)), true, id);
  });

  it('has every id added in filters of every size (odd sizes, one row)', () => {
    for (const n of [1, 2, 3, 7, 100, 1000]) {
      const bits = new Uint8Array(bloomBytes(n));
      const ids = Array.from({ length: n }, (_, i) => `id-${n}-${i}`);
      for (const id of ids) bloomAdd(bits, id);
      for (const id of ids) assert.equal(bloomHas(bits, bloomKey(id)), true, id);
    }
  });

  it('answers false positives near the design rate when full (about 1%)', () => {
    const n = 8192;
    const bits = new Uint8Array(bloomBytes(n));
    for (let i = 0; i < n; i++) bloomAdd(bits, randomUUID());
    let hits = 0;
    const probes = 200_000;
    for (let i = 0; i < probes; i++) if (bloomHas(bits, bloomKey(randomUUID()))) hits++;
    const rate = hits / probes;
    assert.ok(DESIGN_FP > 0.005 && DESIGN_FP < 0.012, `design rate ${DESIGN_FP}`);
    assert.ok(rate < DESIGN_FP * 1.5 && rate > DESIGN_FP / 1.5, `rate ${rate}, design ${DESIGN_FP}`);
    // Sequential ids (as `c-123` or a counter in an X-Request-ID) spread as well as random ones.
    const seq = new Uint8Array(bloomBytes(n));
    for (let i = 0; i < n; i++) bloomAdd(seq, `c-${i}`);
    hits = 0;
    for (let i = 0; i < probes; i++) if (bloomHas(seq, bloomKey(`c-${n + i}`))) hits++;
    assert.ok(hits / probes < DESIGN_FP * 1.5, `sequential rate ${hits / probes}`);
  });

  it('is deterministic: the same bits for the same ids, an empty filter holds nothing', () => {
    const a = new Uint8Array(bloomBytes(10));
    const b = new Uint8Array(bloomBytes(10));
    for (const id of ['x', 'y', 'z']) {
      bloomAdd(a, id);
      bloomAdd(b, id);
    }
    assert.deepEqual(a, b);
    assert.equal(bloomHas(new Uint8Array(bloomBytes(10)), bloomKey('x')), false);
    assert.equal(bloomHas(new Uint8Array(0), bloomKey('x')), true, 'no bits: no answer, so maybe');
  });
});

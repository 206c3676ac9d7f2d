import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LogThrottle } from './log-throttle.js';

describe('LogThrottle', () => {
  const CASES: { name: string; at: number[]; want: (number | null)[] }[] = [
    { name: 'the first occurrence is written at once', at: [0], want: [0] },
    {
      name: 'repeats inside the interval are held back, and counted on the next line written',
      at: [0, 1, 2, 3, 10_000],
      want: [0, null, null, null, 3],
    },
    {
      name: 'an occurrence a whole interval after the last line is written with nothing held back',
      at: [0, 20_000],
      want: [0, 0],
    },
  ];
  for (const c of CASES) {
    it(c.name, () => {
      let now = 0;
      const t = new LogThrottle(10_000, () => now);
      const got = c.at.map((ms) => {
        now = ms;
        return t.admit('queue write failed')?.heldBack ?? null;
      });
      assert.deepEqual(got, c.want);
    });
  }

  it('counts kinds apart', () => {
    const t = new LogThrottle(10_000, () => 0);
    assert.deepEqual([t.admit('a'), t.admit('b'), t.admit('a')], [{ heldBack: 0 }, { heldBack: 0 }, undefined]);
  });
});

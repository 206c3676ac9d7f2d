import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatStatuses, SimStats } from './stats.js';

const head = {
  url: 'http://x',
  run_id: 'sim-1',
  stopped: 'duration' as const,
  connections: 1,
  rate: null,
  withdrawn: [],
};

describe('SimStats', () => {
  it('summarises latency percentiles per flow and in total (to HdrHistogram precision)', () => {
    const s = new SimStats();
    for (let ms = 1; ms <= 100; ms++) s.record('d/a', 'run', '200', ms);
    s.record('d/b', 'enqueue', '202', 500);
    const sum = s.summary(head, 2);
    const a = sum.flows.find((f) => f.flow === 'd/a')!;
    const near = (got: number, want: number) => assert.ok(Math.abs(got - want) <= want * 0.01, `${got} ~ ${want}`);
    near(a.latency_ms.p50, 50);
    near(a.latency_ms.p95, 95);
    near(a.latency_ms.p99, 99);
    near(sum.total.latency_ms.max, 500);
    assert.equal(a.rps, 50);
    assert.deepEqual(
      { requests: sum.total.requests, run: sum.total.run, enqueue: sum.total.enqueue },
      { requests: 101, run: 100, enqueue: 1 },
    );
    assert.deepEqual(sum.total.statuses, { '200': 100, '202': 1 });
    assert.deepEqual(
      sum.flows.map((f) => f.flow),
      ['d/a', 'd/b'],
    );
  });

  it('an empty run summarises to zeros, not NaN', () => {
    const sum = new SimStats().summary(head, 0);
    assert.deepEqual(sum.total.latency_ms, { p50: 0, p95: 0, p99: 0, max: 0 });
    assert.equal(sum.total.rps, 0);
  });

  it("the live rate counts only the interval's requests, then starts again", () => {
    const s = new SimStats();
    for (let i = 0; i < 10; i++) s.record('d/a', 'run', '200', 1);
    assert.equal(s.tick(1, 0.5).total.currentRps, 20);
    s.record('d/a', 'run', 'error', 1);
    const second = s.tick(2, 1);
    assert.equal(second.total.currentRps, 1);
    assert.equal(second.total.requests, 11);
  });

  it('formats status counts in code order', () => {
    assert.equal(formatStatuses({ '502': 1, '200': 3, error: 2 }), '200:3 502:1 error:2');
  });
});

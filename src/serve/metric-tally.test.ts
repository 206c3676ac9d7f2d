import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { TallyFamily } from './metric-tally.js';

describe('TallyFamily', () => {
  const CASES: { name: string; observed: number[]; want: Record<string, number> }[] = [
    {
      name: 'a value equal to a bound counts in that bucket (le is inclusive)',
      observed: [0.1],
      want: { '0.1': 1, '1': 1, '+Inf': 1 },
    },
    { name: 'a value past the last bound counts only in +Inf', observed: [5], want: { '0.1': 0, '1': 0, '+Inf': 1 } },
    { name: 'buckets are cumulative', observed: [0.05, 0.5, 0.5, 3], want: { '0.1': 1, '1': 3, '+Inf': 4 } },
  ];
  for (const c of CASES) {
    it(c.name, async () => {
      const registry = new Registry();
      const family = new TallyFamily('t_seconds', 'help', [0.1, 1]);
      family.register(registry);
      const series = family.series('a', { route: '/a' });
      for (const v of c.observed) series.observe(v);
      const text = await registry.metrics();
      for (const [le, n] of Object.entries(c.want))
        assert.match(text, new RegExp(`^t_seconds_bucket\\{route="/a",le="${le.replace('+', '\\+')}"\\} ${n}$`, 'm'));
      assert.match(text, new RegExp(`^t_seconds_count\\{route="/a"\\} ${c.observed.length}$`, 'm'));
      assert.match(text, /^# TYPE t_seconds histogram$/m);
    });
  }

  it('a family without buckets is a counter of its series', async () => {
    const registry = new Registry();
    const family = new TallyFamily('c_total', 'help');
    family.register(registry);
    family.series('x', { status: '200' }).inc();
    family.series('x', { status: '200' }).inc();
    assert.match(await registry.metrics(), /^# TYPE c_total counter\nc_total\{status="200"\} 2$/m);
  });
});

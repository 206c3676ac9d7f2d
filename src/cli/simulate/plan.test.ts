import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SvcError } from '../../common/errors.js';
import { collectKeys, keyedFlows, parseKeyPair, Rotation, verdictFor, type SimFlow, type SimTarget } from './plan.js';

const flowOf = (tenant: string, flow: string): SimFlow => ({ tenant, flow, body: 'null' });

describe('simulate keys', () => {
  it('parses tenant=key, the key keeping any further "="', () => {
    assert.deepEqual(parseKeyPair('demo=svk_abc=='), { tenant: 'demo', key: 'svk_abc==' });
  });

  it('refuses a bare key, naming the expected form', () => {
    assert.throws(
      () => parseKeyPair('svk_0123'),
      (e: unknown) => e instanceof SvcError && e.message.includes('--api-key <tenant>=<key>'),
    );
  });

  it('refuses an empty tenant or key', () => {
    assert.throws(() => parseKeyPair('=svk_1'), SvcError);
    assert.throws(() => parseKeyPair('demo='), SvcError);
  });

  it('reads SVC_SIMULATE_API_KEYS as a comma-separated list, a flag overriding the same tenant', () => {
    const keys = collectKeys(['b=flag'], ' a=env1 , b=env2 ,');
    assert.deepEqual([...keys.entries()].sort(), [
      ['a', 'env1'],
      ['b', 'flag'],
    ]);
  });

  it('refuses a bare key in the environment, naming the variable', () => {
    assert.throws(
      () => collectKeys([], 'a=1,svk_bare'),
      (e: unknown) => e instanceof SvcError && e.message.startsWith('SVC_SIMULATE_API_KEYS'),
    );
  });

  it('keeps the flows of keyed tenants and names each skipped tenant once', () => {
    const flows = [flowOf('a', 'x'), flowOf('b', 'y'), flowOf('b', 'z'), flowOf('c', 'w')];
    const { used, skippedTenants } = keyedFlows(flows, new Map([['a', 'k']]));
    assert.deepEqual(
      used.map((f) => f.flow),
      ['x'],
    );
    assert.deepEqual(skippedTenants, ['b', 'c']);
  });
});

describe('simulate answers', () => {
  it('401 stops, 403 and 404 withdraw, anything else is counted traffic', () => {
    assert.equal(verdictFor(401), 'stop');
    assert.equal(verdictFor(403), 'withdraw');
    assert.equal(verdictFor(404), 'withdraw');
    for (const s of [200, 202, 400, 409, 422, 429, 500, 502, 503]) assert.equal(verdictFor(s), 'count', String(s));
  });
});

describe('Rotation', () => {
  const take = (r: Rotation, n: number) => Array.from({ length: n }, () => r.next());
  const key = (t: SimTarget | undefined) => (t === undefined ? '-' : `${t.flow}:${t.route}`);

  it('sends one request in three to /enqueue and the flows take turns on each route', () => {
    const picks = take(new Rotation([flowOf('d', 'a'), flowOf('d', 'b')]), 300);
    assert.equal(picks.filter((t) => t?.route === 'enqueue').length, 100);
    assert.equal(picks.filter((t) => t?.route === 'run').length, 200);
    for (const route of ['run', 'enqueue'] as const) {
      const forRoute = picks.filter((t) => t?.route === route);
      assert.equal(forRoute.filter((t) => t?.flow === 'a').length, forRoute.length / 2, route);
    }
  });

  it('a 403 or 404 on either route withdraws the whole flow: neither route picks it again, the others go on', () => {
    for (const route of ['run', 'enqueue'] as const) {
      const r = new Rotation([flowOf('d', 'a'), flowOf('d', 'b')]);
      assert.equal(r.withdraw({ tenant: 'd', flow: 'a' }), true, route);
      assert.equal(r.withdraw({ tenant: 'd', flow: 'a' }), false, 'withdrawn once');
      const picks = take(r, 60).map(key);
      assert.ok(!picks.includes('a:run') && !picks.includes('a:enqueue'), route);
      assert.ok(picks.includes('b:run') && picks.includes('b:enqueue'), route);
    }
  });

  it('gives nothing once every flow is withdrawn', () => {
    const r = new Rotation([flowOf('d', 'a'), flowOf('d', 'b')]);
    r.withdraw({ tenant: 'd', flow: 'a' });
    assert.equal(r.hasTargets, true);
    r.withdraw({ tenant: 'd', flow: 'b' });
    assert.equal(r.hasTargets, false);
    assert.equal(r.next(), undefined);
  });
});

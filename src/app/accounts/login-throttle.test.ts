import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LoginThrottle, type LoginAttempt, type LoginRefusal } from './login-throttle.js';

/** A throttle on a clock the test moves. */
function clocked(opts: ConstructorParameters<typeof LoginThrottle>[0] = {}) {
  let now = 1_000_000;
  const throttle = new LoginThrottle({ ...opts, now: () => now });
  return { throttle, advance: (ms: number) => (now += ms) };
}

const refusal = (r: LoginAttempt | LoginRefusal): string =>
  r.refused === undefined ? 'begun' : `${r.refused} ${r.retryAfterSecs}s`;

/** Begins and fails one attempt; what begin said. */
function failOnce(t: LoginThrottle, user: string, address: string): string {
  const r = t.begin(user, address);
  if (r.refused === undefined) r.failed();
  return refusal(r);
}

describe('LoginThrottle', () => {
  it('counts attempts as they begin: 60 at once for one account and address get 5 checks, however many hashes may run', () => {
    const { throttle } = clocked({ maxInFlight: 1000 });
    const results = Array.from({ length: 60 }, () => throttle.begin('sysadmin', '10.0.0.9'));
    assert.equal(results.filter((r) => r.refused === undefined).length, 5);
    assert.ok(results.slice(5).every((r) => r.refused === 'throttled' && r.retryAfterSecs === 1));
  });

  it('refuses at once, uncounted, past the hashes in flight; a hash ended frees its place', () => {
    const { throttle } = clocked({ maxInFlight: 2 });
    const a = throttle.begin('u', '10.0.0.1');
    const b = throttle.begin('v', '10.0.0.2');
    assert.equal(refusal(throttle.begin('w', '10.0.0.3')), 'busy 1s');
    assert.equal(throttle.inFlight, 2);
    (a as LoginAttempt).failed();
    (a as LoginAttempt).failed(); // ending twice frees one place only
    assert.equal(refusal(throttle.begin('w', '10.0.0.3')), 'begun');
    (b as LoginAttempt).succeeded();
    assert.equal(throttle.inFlight, 1);
  });

  it('delays double after the free failures, from the last attempt, up to the longest delay', () => {
    const { throttle, advance } = clocked({ maxDelayMs: 8000 });
    for (let i = 0; i < 5; i++) assert.equal(failOnce(throttle, 'u', 'a'), 'begun');
    const seen: string[] = [];
    for (const wait of [1000, 2000, 4000, 8000, 8000]) {
      advance(wait - 1);
      seen.push(failOnce(throttle, 'u', 'a'));
      advance(1);
      seen.push(failOnce(throttle, 'u', 'a'));
    }
    assert.deepEqual(seen, [
      'throttled 1s',
      'begun',
      'throttled 1s',
      'begun',
      'throttled 1s',
      'begun',
      'throttled 1s',
      'begun',
      'throttled 1s',
      'begun',
    ]);
  });

  it('never locks the owner out: failures from one address do not delay the account from another', () => {
    const { throttle } = clocked();
    for (let i = 0; i < 100; i++) failOnce(throttle, 'sysadmin', '203.0.113.7');
    assert.equal(refusal(throttle.begin('sysadmin', '198.51.100.1')), 'begun');
  });

  it('slows an address spraying many accounts after its own free failures', () => {
    const { throttle } = clocked({ addressFreeFailures: 20 });
    for (let i = 0; i < 20; i++) assert.equal(failOnce(throttle, `user${i}`, '203.0.113.7'), 'begun');
    assert.equal(failOnce(throttle, 'user20', '203.0.113.7'), 'throttled 1s');
    assert.equal(failOnce(throttle, 'user20', '198.51.100.1'), 'begun', 'another address is not slowed');
  });

  it('a success forgets its pair and gives its count back to its address', () => {
    const { throttle } = clocked({ addressFreeFailures: 6 });
    for (let i = 0; i < 4; i++) failOnce(throttle, 'u', 'a');
    (throttle.begin('u', 'a') as LoginAttempt).succeeded();
    for (let i = 0; i < 2; i++) assert.equal(failOnce(throttle, 'u', 'a'), 'begun');
    assert.equal(failOnce(throttle, 'u', 'a'), 'throttled 1s', 'the address: 4 + 2 failures');
  });

  it('forgets a pair and an address after the window without attempts', () => {
    const { throttle, advance } = clocked({ windowMs: 60_000, maxDelayMs: 30_000 });
    for (let i = 0; i < 5; i++) failOnce(throttle, 'u', 'a');
    assert.match(failOnce(throttle, 'u', 'a'), /^throttled/);
    advance(60_000);
    for (let i = 0; i < 5; i++) assert.equal(failOnce(throttle, 'u', 'a'), 'begun');
  });
});

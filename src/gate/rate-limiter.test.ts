import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateLimiter } from './rate-limiter.js';

describe('RateLimiter', () => {
  it('starts with rps tokens, then refuses with the 429 headers', () => {
    let now = 1_000_000;
    const limiter = new RateLimiter(() => now);
    for (let i = 0; i < 5; i++) assert.equal(limiter.take(1, 5).allowed, true, `request ${i + 1}`);
    const refused = limiter.take(1, 5);
    assert.equal(refused.allowed, false);
    assert.equal(refused.headers!['x-ratelimit-limit'], '5');
    assert.equal(refused.headers!['x-ratelimit-remaining'], '0');
    assert.equal(refused.headers!['retry-after'], '1');
    // Empty bucket: full (10 tokens) after 2 s.
    assert.equal(refused.headers!['x-ratelimit-reset'], String(Math.ceil((now + 2000) / 1000)));
    now += 0; // same instant: still empty
    assert.equal(limiter.take(1, 5).allowed, false);
  });

  it('refills continuously at rps tokens per second, capped at 2 x rps', () => {
    let now = 0;
    const limiter = new RateLimiter(() => now);
    for (let i = 0; i < 4; i++) limiter.take(7, 4);
    assert.equal(limiter.remaining(7, 4), 0);
    now += 500; // half a second: two tokens
    assert.equal(limiter.remaining(7, 4), 2);
    now += 60_000; // a minute: capped at capacity 8
    assert.equal(limiter.remaining(7, 4), 8);
    for (let i = 0; i < 8; i++) assert.equal(limiter.take(7, 4).allowed, true);
    assert.equal(limiter.take(7, 4).allowed, false);
  });

  it('never shares buckets between keys', () => {
    const limiter = new RateLimiter(() => 0);
    assert.equal(limiter.take(1, 1).allowed, true);
    assert.equal(limiter.take(1, 1).allowed, false);
    assert.equal(limiter.take(2, 1).allowed, true);
  });

  it('charge takes a token without refusing', () => {
    const limiter = new RateLimiter(() => 0);
    limiter.charge(3, 2);
    limiter.charge(3, 2);
    limiter.charge(3, 2);
    assert.equal(limiter.take(3, 2).allowed, false);
  });
});

/** Per-key token buckets: continuous refill of `rps` tokens/s, capacity 2 x rps, `rps` tokens at first use. */

export interface RateDecision {
  readonly allowed: boolean;
  /** Headers for a 429 answer (present when refused). */
  readonly headers?: Record<string, string>;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export class RateLimiter {
  readonly #buckets = new Map<number, Bucket>();
  readonly #now: () => number;

  /** @param now clock in milliseconds (injectable for tests). */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #refill(keyId: number, rps: number): Bucket {
    const now = this.#now();
    let bucket = this.#buckets.get(keyId);
    if (bucket === undefined) {
      bucket = { tokens: rps, updatedMs: now };
      this.#buckets.set(keyId, bucket);
      return bucket;
    }
    const elapsedSec = Math.max(0, now - bucket.updatedMs) / 1000;
    bucket.tokens = Math.min(2 * rps, bucket.tokens + elapsedSec * rps);
    bucket.updatedMs = now;
    return bucket;
  }

  /** Takes one token if one is available; otherwise refuses with the 429 headers. */
  take(keyId: number, rps: number): RateDecision {
    const bucket = this.#refill(keyId, rps);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    const now = this.#now();
    const secondsToOne = (1 - bucket.tokens) / rps;
    const secondsToFull = (2 * rps - bucket.tokens) / rps;
    return {
      allowed: false,
      headers: {
        'x-ratelimit-limit': String(rps),
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.ceil((now + secondsToFull * 1000) / 1000)),
        'retry-after': String(Math.max(1, Math.ceil(secondsToOne))),
      },
    };
  }

  /** A refusal carrying a valid key still costs a token, when one is there to take. */
  charge(keyId: number, rps: number): void {
    const bucket = this.#refill(keyId, rps);
    if (bucket.tokens >= 1) bucket.tokens -= 1;
  }

  /** Tokens left, rounded down (for tests and diagnostics). */
  remaining(keyId: number, rps: number): number {
    return Math.floor(this.#refill(keyId, rps).tokens);
  }
}

/**
 * Login failures throttled per account and per address (in this process): after `maxFailures`
 * failures inside `windowMs`, further attempts for that account or from that address are refused
 * until the window ends, without checking the password.
 */
export interface LoginThrottleOptions {
  /** @default 5 */
  readonly maxFailures?: number;
  /** Milliseconds. @default 15 minutes */
  readonly windowMs?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

interface Window {
  startedMs: number;
  failures: number;
}

export class LoginThrottle {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #windows = new Map<string, Window>();

  constructor(opts: LoginThrottleOptions = {}) {
    this.#max = opts.maxFailures ?? 5;
    this.#windowMs = opts.windowMs ?? 15 * 60_000;
    this.#now = opts.now ?? Date.now;
  }

  /** Seconds until attempts are allowed again for this account and address; 0 when allowed now. */
  blockedForSecs(username: string, address: string): number {
    const now = this.#now();
    let wait = 0;
    for (const key of keys(username, address)) {
      const w = this.#live(key, now);
      if (w !== undefined && w.failures >= this.#max)
        wait = Math.max(wait, Math.ceil((w.startedMs + this.#windowMs - now) / 1000));
    }
    return wait;
  }

  failed(username: string, address: string): void {
    const now = this.#now();
    if (this.#windows.size > 100_000) this.#sweep(now);
    for (const key of keys(username, address)) {
      const w = this.#live(key, now) ?? { startedMs: now, failures: 0 };
      w.failures++;
      this.#windows.set(key, w);
    }
  }

  /** A successful login clears the account's count (the address keeps its own). */
  succeeded(username: string): void {
    this.#windows.delete(`user:${username}`);
  }

  #live(key: string, now: number): Window | undefined {
    const w = this.#windows.get(key);
    if (w !== undefined && now - w.startedMs >= this.#windowMs) {
      this.#windows.delete(key);
      return undefined;
    }
    return w;
  }

  #sweep(now: number): void {
    for (const [key, w] of this.#windows) if (now - w.startedMs >= this.#windowMs) this.#windows.delete(key);
  }
}

function keys(username: string, address: string): [string, string] {
  return [`user:${username}`, `addr:${address}`];
}

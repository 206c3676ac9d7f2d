/**
 * Login attempts, throttled before any password is hashed (in this process), after OWASP's
 * authentication cheat sheet: slow a guesser down, never lock the owner out.
 *
 * - **Counted when the attempt begins**, before the ~0.3 s hash: attempts sent at once are counted
 *   at once (measured before: 60 simultaneous posts had all 59 wrong passwords checked, and the
 *   60th, right, let in, against a limit of 5).
 * - **Per (account, address)**, the first `freeFailures` failures cost nothing; after them each
 *   attempt must wait a delay that doubles with every failure (1 s, 2 s, 4 s ... at most
 *   `maxDelayMs`), counted from the pair's last attempt.
 * - **Per address** (any account: password spraying), the same after `addressFreeFailures`.
 * - **No lock per account**: failures from one address never delay the owner at another (before,
 *   five wrong passwords from anywhere locked the account for 15 minutes).
 * - **At most `maxInFlight` hashes at once**; more attempts are refused at once, uncounted. Each hash
 *   holds 128 MiB, and a burst of them filled the thread pool the durable queue write needs.
 * - A success forgets its pair's failures and gives its own count back to its address. A pair or
 *   an address with no attempt for `windowMs` is forgotten.
 */
export interface LoginThrottleOptions {
  /** Failures of one (account, address) before delays start. @default 5 */
  readonly freeFailures?: number;
  /** Failures from one address, whatever the account, before delays start. @default 20 */
  readonly addressFreeFailures?: number;
  /** Longest delay. Milliseconds. @default 15 minutes */
  readonly maxDelayMs?: number;
  /** Forgotten after this long without an attempt (longer than the longest delay). Milliseconds. @default 1 hour */
  readonly windowMs?: number;
  /** Password hashes checked at once in the process. @default 2 */
  readonly maxInFlight?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** Why an attempt is refused before its password is looked at, and when to try again. */
export interface LoginRefusal {
  /** `throttled`: too many failures for the pair or the address; `busy`: too many hashes in flight. */
  readonly refused: 'throttled' | 'busy';
  readonly retryAfterSecs: number;
}

/** An attempt under way: counted as a failure until it says otherwise. */
export interface LoginAttempt {
  readonly refused?: undefined;
  succeeded(): void;
  failed(): void;
}

interface Tally {
  failures: number;
  lastMs: number;
}

const SECOND = 1000;
/** Entries kept before the stale ones are swept (bounds memory against addresses sprayed). */
const SWEEP_OVER = 100_000;

export class LoginThrottle {
  readonly #freePair: number;
  readonly #freeAddress: number;
  readonly #maxDelayMs: number;
  readonly #windowMs: number;
  readonly #maxInFlight: number;
  readonly #now: () => number;
  readonly #tallies = new Map<string, Tally>();
  #inFlight = 0;

  constructor(opts: LoginThrottleOptions = {}) {
    this.#freePair = opts.freeFailures ?? 5;
    this.#freeAddress = opts.addressFreeFailures ?? 20;
    this.#maxDelayMs = opts.maxDelayMs ?? 15 * 60_000;
    this.#windowMs = opts.windowMs ?? 60 * 60_000;
    this.#maxInFlight = opts.maxInFlight ?? 2;
    this.#now = opts.now ?? Date.now;
  }

  /** Hashes being checked now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Begins an attempt (counted now, as a failure until it succeeds), or says why not and for how long. */
  begin(username: string, address: string): LoginAttempt | LoginRefusal {
    const now = this.#now();
    if (this.#tallies.size > SWEEP_OVER) this.#sweep(now);
    const pairKey = `pair:${address}\u0000${username}`;
    const addressKey = `addr:${address}`;
    const pair = this.#live(pairKey, now);
    const addr = this.#live(addressKey, now);
    const waitMs = Math.max(this.#waitMs(pair, this.#freePair, now), this.#waitMs(addr, this.#freeAddress, now));
    if (waitMs > 0) return { refused: 'throttled', retryAfterSecs: Math.ceil(waitMs / SECOND) };
    if (this.#inFlight >= this.#maxInFlight) return { refused: 'busy', retryAfterSecs: 1 };
    const counted = [this.#count(pairKey, pair, now), this.#count(addressKey, addr, now)] as const;
    this.#inFlight++;
    let ended = false;
    const end = (): boolean => {
      if (ended) return false;
      ended = true;
      this.#inFlight--;
      return true;
    };
    return {
      succeeded: () => {
        if (!end()) return;
        this.#tallies.delete(pairKey);
        counted[1].failures = Math.max(0, counted[1].failures - 1);
      },
      failed: () => void end(),
    };
  }

  /** How long a tally makes the next attempt wait: nothing within its free failures, then doubling. */
  #waitMs(t: Tally | undefined, free: number, now: number): number {
    if (t === undefined || t.failures < free) return 0;
    const delay = Math.min(this.#maxDelayMs, SECOND * 2 ** Math.min(30, t.failures - free));
    return Math.max(0, t.lastMs + delay - now);
  }

  #count(key: string, t: Tally | undefined, now: number): Tally {
    const tally = t ?? { failures: 0, lastMs: now };
    tally.failures++;
    tally.lastMs = now;
    this.#tallies.set(key, tally);
    return tally;
  }

  #live(key: string, now: number): Tally | undefined {
    const t = this.#tallies.get(key);
    if (t !== undefined && now - t.lastMs >= this.#windowMs) {
      this.#tallies.delete(key);
      return undefined;
    }
    return t;
  }

  #sweep(now: number): void {
    for (const [key, t] of this.#tallies) if (now - t.lastMs >= this.#windowMs) this.#tallies.delete(key);
  }
}

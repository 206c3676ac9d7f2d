/** Bounds the number of flow executions in flight; the HTTP door answers 503 past the bound. */

/** A counting gate checked before a flow starts. Not a queue: a refused caller is told to retry. */
export class ExecutionLimiter {
  #inFlight = 0;

  /** @param max executions allowed in flight at once (`max_concurrent_flow_executions`) */
  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`ExecutionLimiter max must be a positive integer, got ${max}`);
  }

  /** Takes a slot if one is free; a `true` answer must be paired with exactly one `release()`. */
  tryAcquire(): boolean {
    if (this.#inFlight >= this.max) return false;
    this.#inFlight++;
    return true;
  }

  release(): void {
    if (this.#inFlight > 0) this.#inFlight--;
  }

  get inFlight(): number {
    return this.#inFlight;
  }
}

/** Seconds a 503 `server busy` answer tells the caller to wait (`Retry-After`). */
export const BUSY_RETRY_AFTER_SECS = 1;

/** Waiting in tests: on a condition (the default), or for time to pass when the passing of time is what is tested. */

/**
 * Polls `probe` every `intervalMs` until it returns a truthy value, and returns that value.
 * A probe that throws counts as "not yet" (a database not created yet, or busy); after
 * `timeoutMs` the wait fails with `what` and the last error, if any.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | null | false, timeoutMs = 15_000, intervalMs = 25): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    let value: T | undefined | null | false;
    let error: unknown;
    try {
      value = probe();
    } catch (err) {
      value = undefined;
      error = err;
    }
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${error === undefined ? '' : ` (last error: ${String(error)})`}`);
    await sleep(intervalMs);
  }
}

/** Lets time pass. Only for a test about time itself (a window, a lease, nothing happening for a while). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

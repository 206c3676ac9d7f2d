/** Waiting in tests: on a condition (the default), or for time to pass when the passing of time is what is tested. */

type NotYet = undefined | null | false;

/**
 * Polls `probe` (sync or async) every `intervalMs` until it gives a truthy value, and returns that
 * value. A probe that throws or rejects counts as "not yet" (a database not created yet, or busy);
 * after `timeoutMs` the wait fails with `what` and the last error, if any.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | NotYet | Promise<T | NotYet>,
  timeoutMs = 15_000,
  intervalMs = 25,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    let value: T | NotYet;
    let error: unknown;
    try {
      value = await probe();
    } catch (err) {
      value = undefined;
      error = err;
    }
    if (value) return value;
    if (Date.now() > end)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${error === undefined ? '' : ` (last error: ${String(error)})`}`,
      );
    await sleep(intervalMs);
  }
}

/** Lets time pass. Only for a test about time itself (a window, a lease, nothing happening for a while). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Time in the formats the service stores and prints: ISO 8601 UTC, to the second or the millisecond. */

let lastSecond = -1;
let lastSecondIso = '';
/** ISO 8601 UTC to the second; formatted once per second, since most callers share their second. */
export function isoSeconds(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastSecond = second;
    lastSecondIso = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  return lastSecondIso;
}

let msSecond = -1;
let msSecondPrefix = '';
let lastMs = -1;
let lastMsIso = '';
/**
 * `new Date(ms).toISOString()` for a whole number of ms: the second's text (up to its '.') is
 * formatted once per second and the milliseconds appended, and the last answer is kept (log rows
 * stamp thousands a second; a request's two rows usually share their millisecond).
 */
export function isoMillis(ms: number = Date.now()): string {
  if (ms === lastMs) return lastMsIso;
  const second = Math.floor(ms / 1000);
  const milli = ms - second * 1000;
  if (!Number.isInteger(milli)) return new Date(ms).toISOString();
  if (second !== msSecond) {
    msSecond = second;
    msSecondPrefix = new Date(second * 1000).toISOString().slice(0, -4);
  }
  lastMs = ms;
  lastMsIso = msSecondPrefix + MILLIS[milli]!;
  return lastMsIso;
}

/** '000Z' .. '999Z': a millisecond's text with the closing Z. */
const MILLIS: readonly string[] = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, '0')}Z`);

/** ISO 8601 UTC with seconds: the one format of stored timestamps. */
export function isoNow(now?: Date): string {
  return isoSeconds(now === undefined ? Date.now() : now.getTime());
}

/**
 * Milliseconds since `started` (a `performance.now()` reading), to the microsecond: a delivery's
 * or a step's duration is never finer, and a shorter number is cheaper to write as text.
 */
export function msSince(started: number): number {
  return Math.round((performance.now() - started) * 1000) / 1000;
}

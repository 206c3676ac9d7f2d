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

let lastMs = -1;
let lastMsIso = '';
/** `new Date(ms).toISOString()`, formatted once per millisecond (queue records stamp thousands a second). */
export function isoMillis(ms: number = Date.now()): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastMsIso = new Date(ms).toISOString();
  }
  return lastMsIso;
}

/** ISO 8601 UTC with seconds: the one format of stored timestamps. */
export function isoNow(now?: Date): string {
  return isoSeconds(now === undefined ? Date.now() : now.getTime());
}

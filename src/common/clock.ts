/** Time in the one format the service stores and prints: ISO 8601 UTC with seconds. */

export function isoNow(now: Date = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

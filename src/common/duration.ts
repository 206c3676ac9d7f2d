/** A duration as an operator or an author writes it: `30s`, `10m`, `2h`, `7d`. */

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The duration in milliseconds; undefined when `text` is not one. */
export function durationMs(text: string): number | undefined {
  const d = DURATION.exec(text.trim());
  return d === null ? undefined : Number(d[1]) * UNIT_MS[d[2]!]!;
}

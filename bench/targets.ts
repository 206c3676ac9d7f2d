/**
 * The performance targets of issue 40 (docs/performance.md, "Targets"), one table for `npm run
 * bench` and `npm run bench:peers`: each is a ratio of two figures measured in the same run, and
 * says met or missed. A figure the run did not measure says so instead.
 */
export interface Target {
  readonly what: string;
  /** The measured ratio; undefined when a side was not measured in this run. */
  readonly value: number | undefined;
  readonly target: number;
  /** 'at least' (>=) or 'at most' (<=) the target. */
  readonly direction: 'at least' | 'at most';
  /** How the ratio is printed: 'x' (2.10x) or 'ratio' (0.80). */
  readonly unit?: 'x' | 'ratio';
}

export function targetMet(t: Target): boolean | undefined {
  if (t.value === undefined || !Number.isFinite(t.value)) return undefined;
  return t.direction === 'at least' ? t.value >= t.target : t.value <= t.target;
}

/** A measured ratio keeps three decimals (0.968 against 0.97 must not read 0.97), a target two. */
function show(value: number, unit: 'x' | 'ratio', decimals: number): string {
  return unit === 'x' ? `${value.toFixed(decimals)}x` : value.toFixed(decimals);
}

/** The targets as lines: what, the value, the target, and met, missed or not measured. */
export function targetLines(targets: readonly Target[]): string {
  const width = Math.max(...targets.map((t) => t.what.length));
  return targets
    .map((t) => {
      const unit = t.unit ?? 'ratio';
      const met = targetMet(t);
      const verdict = met === undefined ? 'not measured in this run' : met ? 'met' : 'MISSED';
      const value = t.value === undefined ? '-' : show(t.value, unit, 3);
      const goal = `${t.direction === 'at least' ? '>=' : '<='} ${show(t.target, unit, 2)}`;
      return `${t.what.padEnd(width)}  ${value.padStart(8)}  (target ${goal})  ${verdict}\n`;
    })
    .join('');
}

/** Ratio of two figures, undefined when either is missing or the divisor is zero. */
export function ratioOf(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

/**
 * Where a target's rate lies against the ceiling row of `bench:peers` (one `node:net` process doing
 * nothing but the contract, socket-ceiling.ts) in the same run: a rate past it is out of reach of a
 * one-process server on this runtime and machine, not only of ours.
 */
export function reachLine(what: string, wanted: number | undefined, ceiling: number | undefined): string {
  const share = ratioOf(wanted, ceiling);
  if (wanted === undefined || ceiling === undefined || share === undefined)
    return `${what}: not measured in this run\n`;
  const verdict =
    share <= 1 ? 'within reach of a server on this runtime' : 'past what any server on this runtime answered';
  return `${what}: ${wanted.toFixed(0)} req/s, ${share.toFixed(2)} of the node:net ceiling (${ceiling.toFixed(0)} req/s): ${verdict}\n`;
}

/**
 * The shape every part of `npm run bench:scale` returns: figures measured at several sizes of one
 * dimension (flows deployed, keys, queue backlog, log rows, audit entries), each printed with its
 * ratio to the smallest size measured in the same run.
 */

/** One size of a dimension, as printed in the table's header: `1 flow`, `10,000 flows`. */
export interface ScaleSize {
  readonly label: string;
  /** The count itself (flows, keys, messages, rows, entries). */
  readonly count: number;
}

/** One figure at every size measured. `values[i]` belongs to `sizes[i]` of its section; NaN where not measured. */
export interface ScaleFigure {
  /** What was measured, with its unit: `start-up until /health answers (ms)`. */
  readonly name: string;
  readonly values: readonly number[];
  /** Whether a larger value is better (throughput) or worse (time, memory): only for the reader's arrow. */
  readonly higherIsBetter: boolean;
  /** A target from the issue, said in words, with whether it was met: `<= 1.05x the 1-flow figure: met`. */
  readonly target?: string;
}

export interface ScaleSection {
  /** `Flows`, `Keys and tenants`, `Queue backlog`, `Event log`, `Audit chain`. */
  readonly title: string;
  readonly sizes: readonly ScaleSize[];
  readonly figures: readonly ScaleFigure[];
  /** Anything the reader must know to trust the figures (what was seeded, how). */
  readonly notes?: readonly string[];
}

/** What every part receives from the entry point. */
export interface ScaleContext {
  /** dist/src/main.js, the CLI under test. */
  readonly svcBin: string;
  /** A scratch directory of this part's own, removed by the entry point afterwards. */
  readonly workDir: string;
  /** `--quick`: the smallest sizes only, for a smoke run (seconds, not minutes). */
  readonly quick: boolean;
  /** Progress lines (stderr), so a long run shows where it is. */
  readonly progress: (line: string) => void;
}

/** A part of the benchmark. */
export type ScalePart = (ctx: ScaleContext) => Promise<ScaleSection>;

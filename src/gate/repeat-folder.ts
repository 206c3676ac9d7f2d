/**
 * Folds repeats of one kind of record into a count per window, so something a caller can repeat
 * at any rate (a refusal) costs a bounded number of records: the first few of each kind in a
 * window are recorded at once, one by one, as they come (an occasional repeat, a person trying
 * again, loses nothing); past them the repeats are only counted, and come back as one summary
 * when the window is closed. A kind still repeating when its window closes stays folded in the
 * next one (no record one by one until a window passes without repeats): a caller repeating for
 * hours costs one summary per window, not six. Pure: the caller supplies the clock and closes the
 * windows.
 */

/** The repeats of one kind since the window opened. */
export interface FoldedRepeats<T> {
  /** The first folded record of the kind: what the summary describes. */
  readonly sample: T;
  /** Records of the kind folded (not recorded one by one) in the window. */
  readonly repeats: number;
  /** When the first and the last folded record came. Epoch milliseconds. */
  readonly firstMs: number;
  readonly lastMs: number;
  /** Distinct variants among the folded records (see RepeatFolderOptions.variantOf), at most MAX_VARIANTS. */
  readonly variants: number;
  /** More variants than counted. */
  readonly moreVariants: boolean;
}

/** Variants counted per kind and window (what a caller varies is counted, never kept whole). */
export const MAX_VARIANTS = 100;

export interface RepeatFolderOptions<T = unknown> {
  /** Records of one kind recorded one by one per window before the rest are folded. @default 5 */
  readonly recordedPerWindow?: number;
  /**
   * Distinct kinds tracked per window. Past it, a new kind is folded at once into its overflow
   * kind (see `note`), so a caller varying what it sends cannot grow memory or the records
   * without bound. @default 1024
   */
  readonly maxKinds?: number;
  /** What may vary within a kind (for a refusal: the tenant and flow the caller chose). @default none */
  readonly variantOf?: (record: T) => string;
}

interface Tally<T> {
  recorded: number;
  sample: T | undefined;
  repeats: number;
  firstMs: number;
  lastMs: number;
  variants: Set<string>;
  moreVariants: boolean;
}

export class RepeatFolder<T> {
  readonly #tallies = new Map<string, Tally<T>>();
  readonly #maxKinds: number;
  readonly #recordedPerWindow: number;
  readonly #variantOf: ((record: T) => string) | undefined;

  constructor(opts: RepeatFolderOptions<T> = {}) {
    this.#maxKinds = opts.maxKinds ?? 1024;
    this.#recordedPerWindow = opts.recordedPerWindow ?? 5;
    this.#variantOf = opts.variantOf;
  }

  /**
   * `record` for the first `recordedPerWindow` of `kind` in this window (the caller records it
   * now); `folded` for a later repeat, or for a new kind past `maxKinds`, which is counted under
   * `overflow` instead (a coarser kind, such as the same refusal without the names the caller chose).
   */
  note(kind: string, record: T, nowMs: number, overflow: () => { kind: string; record: T }): 'record' | 'folded' {
    const tally = this.#tallies.get(kind);
    if (tally !== undefined) {
      if (tally.recorded < this.#recordedPerWindow) {
        tally.recorded++;
        return 'record';
      }
      this.#fold(tally, record, nowMs);
      return 'folded';
    }
    if (this.#tallies.size < this.#maxKinds) {
      this.#tallies.set(kind, fresh(1, nowMs));
      return 'record';
    }
    const coarse = overflow();
    let bucket = this.#tallies.get(coarse.kind);
    if (bucket === undefined) {
      // Overflow kinds may exceed maxKinds: there are as few of them as coarse kinds. None of
      // their records is recorded one by one: the caller is varying what it sends.
      bucket = fresh(this.#recordedPerWindow, nowMs);
      this.#tallies.set(coarse.kind, bucket);
    }
    this.#fold(bucket, coarse.record, nowMs);
    return 'folded';
  }

  /**
   * Closes the window: the kinds with repeats, each once. A kind without repeats starts afresh; one
   * with repeats stays folded in the next window (its records go straight to its next summary).
   */
  closeWindow(): FoldedRepeats<T>[] {
    const out: FoldedRepeats<T>[] = [];
    const hot = new Map<string, Tally<T>>();
    for (const [kind, t] of this.#tallies) {
      if (t.sample === undefined || t.repeats === 0) continue;
      out.push({
        sample: t.sample,
        repeats: t.repeats,
        firstMs: t.firstMs,
        lastMs: t.lastMs,
        variants: Math.max(1, t.variants.size),
        moreVariants: t.moreVariants,
      });
      hot.set(kind, fresh(this.#recordedPerWindow, t.lastMs));
    }
    this.#tallies.clear();
    for (const [kind, t] of hot) this.#tallies.set(kind, t);
    return out;
  }

  #fold(tally: Tally<T>, record: T, nowMs: number): void {
    if (tally.repeats === 0) {
      tally.sample = record;
      tally.firstMs = nowMs;
    }
    tally.repeats++;
    tally.lastMs = nowMs;
    if (this.#variantOf === undefined) return;
    const v = this.#variantOf(record);
    if (tally.variants.size < MAX_VARIANTS) tally.variants.add(v);
    else if (!tally.variants.has(v)) tally.moreVariants = true;
  }
}

function fresh<T>(recorded: number, nowMs: number): Tally<T> {
  return {
    recorded,
    sample: undefined,
    repeats: 0,
    firstMs: nowMs,
    lastMs: nowMs,
    variants: new Set(),
    moreVariants: false,
  };
}

/**
 * Folds repeats of one kind of record into a count per window, so something a caller can repeat
 * at any rate (a refusal) costs a bounded number of records: the first few of each kind in a
 * window are recorded at once, one by one, as they come (an occasional repeat, a person trying
 * again, loses nothing); past them the repeats are only counted, and come back as one summary
 * when the window is closed. Pure: the caller supplies the clock and closes the windows.
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
}

export interface RepeatFolderOptions {
  /** Records of one kind recorded one by one per window before the rest are folded. @default 5 */
  readonly recordedPerWindow?: number;
  /**
   * Distinct kinds tracked per window. Past it, a new kind is folded at once into its overflow
   * kind (see `note`), so a caller varying what it sends cannot grow memory or the records
   * without bound. @default 1024
   */
  readonly maxKinds?: number;
}

interface Tally<T> {
  recorded: number;
  sample: T | undefined;
  repeats: number;
  firstMs: number;
  lastMs: number;
}

export class RepeatFolder<T> {
  readonly #tallies = new Map<string, Tally<T>>();
  readonly #maxKinds: number;
  readonly #recordedPerWindow: number;

  constructor(opts: RepeatFolderOptions = {}) {
    this.#maxKinds = opts.maxKinds ?? 1024;
    this.#recordedPerWindow = opts.recordedPerWindow ?? 5;
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
      this.#tallies.set(kind, { recorded: 1, sample: undefined, repeats: 0, firstMs: nowMs, lastMs: nowMs });
      return 'record';
    }
    const coarse = overflow();
    let bucket = this.#tallies.get(coarse.kind);
    if (bucket === undefined) {
      // Overflow kinds may exceed maxKinds: there are as few of them as coarse kinds. None of
      // their records is recorded one by one: the caller is varying what it sends.
      bucket = { recorded: this.#recordedPerWindow, sample: undefined, repeats: 0, firstMs: nowMs, lastMs: nowMs };
      this.#tallies.set(coarse.kind, bucket);
    }
    this.#fold(bucket, coarse.record, nowMs);
    return 'folded';
  }

  /** Closes the window: the kinds with repeats, each once, and a fresh start for every kind. */
  closeWindow(): FoldedRepeats<T>[] {
    const out: FoldedRepeats<T>[] = [];
    for (const t of this.#tallies.values()) {
      if (t.sample !== undefined && t.repeats > 0)
        out.push({ sample: t.sample, repeats: t.repeats, firstMs: t.firstMs, lastMs: t.lastMs });
    }
    this.#tallies.clear();
    return out;
  }

  #fold(tally: Tally<T>, record: T, nowMs: number): void {
    if (tally.repeats === 0) {
      tally.sample = record;
      tally.firstMs = nowMs;
    }
    tally.repeats++;
    tally.lastMs = nowMs;
  }
}

/**
 * Bounds a repeated operational log line: the first occurrence of a kind is written at once, later
 * ones at most once per interval, each carrying the count of those held back since the last line
 * written. A full disk that refuses every write must not also flood the operator's log (measured:
 * 1,000 lines a second under an /enqueue storm). Pure apart from the clock, which is injected.
 */
export class LogThrottle {
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #kinds = new Map<string, { lastMs: number; held: number }>();

  constructor(intervalMs = 10_000, now: () => number = Date.now) {
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /**
   * `{ heldBack }` when this occurrence is to be written (with how many were held back before it),
   * undefined when it is to be held back. `kind` is one of a few fixed strings: the map never grows past them.
   */
  admit(kind: string): { heldBack: number } | undefined {
    const now = this.#now();
    const k = this.#kinds.get(kind);
    if (k === undefined) {
      this.#kinds.set(kind, { lastMs: now, held: 0 });
      return { heldBack: 0 };
    }
    if (now - k.lastMs < this.#intervalMs) {
      k.held++;
      return undefined;
    }
    const heldBack = k.held;
    k.lastMs = now;
    k.held = 0;
    return { heldBack };
  }
}

/** The cleanup steps of `svc serve`, run once in reverse order of start; every one runs even when another fails. */
export class Closers {
  readonly #steps: (() => unknown)[] = [];

  /** Registers a step; it runs before every step registered earlier. */
  add(step: () => unknown): void {
    this.#steps.push(step);
  }

  /** Runs every step (each at most once over the life of this object) and returns what failed. */
  async runAll(): Promise<unknown[]> {
    const errors: unknown[] = [];
    const steps = this.#steps.splice(0).reverse();
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        errors.push(err);
      }
    }
    return errors;
  }
}

/**
 * The turn between two slices of a long job run in pieces (retention deletes, vacuum): a
 * `setImmediate`, so work that arrived meanwhile (requests, or the event writer's batches in its
 * thread) runs first, and the `stopping` check (shutdown ends the job at the next turn). It also
 * times each slice (from one turn to the next), so a job can report its longest: the longest its
 * thread and the database's write lock were held at once.
 */
export interface SlicePacer {
  /** Awaited after each slice; false once `stopping()` says true. */
  between(): Promise<boolean>;
  /** The longest slice so far, in ms. */
  readonly longestSliceMs: number;
}

/** The first slice is timed from this call. */
export function slicePacer(stopping: () => boolean = () => false): SlicePacer {
  let sliceStarted = performance.now();
  let longest = 0;
  return {
    between() {
      longest = Math.max(longest, performance.now() - sliceStarted);
      return new Promise<boolean>((resolve) =>
        setImmediate(() => {
          sliceStarted = performance.now();
          resolve(!stopping());
        }),
      );
    },
    get longestSliceMs() {
      return longest;
    },
  };
}

/**
 * Which appended audit entries are committed, for a caller that must not go on before its entries
 * are (a queue delivery's checkpoint: AuditAppender.committed). Both writers commit their entries in the
 * order they were appended, so a running count of entries appended and one of entries committed
 * say it: entry n is committed once the committed count reaches n.
 *
 * A wait also ends, without the commit, when the writer reports a failed batch (a full disk, the
 * database away: the writer holds the entries and tries again) or after COMMIT_WAIT_MS. What the
 * caller acknowledges is then already stored (a queued message): refusing it would have the
 * client send it again, and a refusal must mean "not stored". So the guarantee is "committed
 * before the answer while the audit store takes writes"; while it does not, the entries wait in
 * memory, and only a crash before it is back loses them (the writer reports every failure).
 */

/** Longest an acknowledgement waits for its audit entry. Milliseconds. */
export const COMMIT_WAIT_MS = 10_000;

interface Waiter {
  readonly ticket: number;
  readonly resolve: () => void;
}

export class CommitTickets {
  #appended = 0;
  #committed = 0;
  /** In ticket order (tickets are issued in order). */
  #waiters: Waiter[] = [];

  /** The ticket of the entry appended now. */
  issue(): number {
    return ++this.#appended;
  }

  /** The ticket of the last entry appended. */
  get appended(): number {
    return this.#appended;
  }

  /** `count` more entries were committed, in append order. */
  committed(count: number): void {
    this.#committed += count;
    let done = 0;
    while (done < this.#waiters.length && this.#waiters[done]!.ticket <= this.#committed)
      this.#waiters[done++]!.resolve();
    if (done > 0) this.#waiters = this.#waiters.slice(done);
  }

  /** The writer failed a batch (it keeps it and tries again): every wait ends now, without the commit. */
  failed(): void {
    for (const w of this.#waiters) w.resolve();
    this.#waiters = [];
  }

  /**
   * As wait, asking the writer to hurry (`hurry`: send its batch now) unless the entry is committed
   * already. The one way both writers answer committed.
   */
  waitHurried(ticket: number, hurry: () => void): Promise<void> {
    if (ticket <= this.#committed) return Promise.resolve();
    hurry();
    return this.wait(ticket);
  }

  /**
   * As wait, asking the writer to hurry only if the entry is not committed within `patienceMs`: for
   * progress that may lag behind its entries (a checkpoint asked in the background), so that the
   * writer's own pace (one commit for many batches) usually answers it without a write of its own.
   */
  waitPatient(ticket: number, patienceMs: number, hurry: () => void): Promise<void> {
    if (ticket <= this.#committed) return Promise.resolve();
    const nudge = setTimeout(() => {
      if (ticket > this.#committed) hurry();
    }, patienceMs);
    nudge.unref();
    return this.wait(ticket).finally(() => clearTimeout(nudge));
  }

  /** Resolves once the entry of `ticket` is committed, a batch failed, or `timeoutMs` passed. Never rejects. */
  wait(ticket: number, timeoutMs = COMMIT_WAIT_MS): Promise<void> {
    if (ticket <= this.#committed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w.resolve !== done);
        resolve();
      }, timeoutMs);
      timer.unref();
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#waiters.push({ ticket, resolve: done });
    });
  }
}

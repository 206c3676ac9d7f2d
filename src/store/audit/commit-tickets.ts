/**
 * Which appended audit entries are committed, for a caller that must not answer before its entry
 * is (an acknowledgement: AuditAppender.appendCommitted). Both writers commit their entries in the
 * order they were appended, so a running count of entries appended and one of entries committed
 * say it: entry n is committed once the committed count reaches n.
 */
import { StorageUnavailableError } from '../../common/errors.js';

/** How long an acknowledgement waits for its audit entry before it is refused (the entry stays queued). Milliseconds. */
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

  /** `count` more entries were committed, in append order. */
  committed(count: number): void {
    this.#committed += count;
    let done = 0;
    while (done < this.#waiters.length && this.#waiters[done]!.ticket <= this.#committed)
      this.#waiters[done++]!.resolve();
    if (done > 0) this.#waiters = this.#waiters.slice(done);
  }

  /**
   * Resolves once the entry of `ticket` is committed.
   * @throws StorageUnavailableError after `timeoutMs` (the writer keeps the entry and goes on trying)
   */
  wait(ticket: number, timeoutMs = COMMIT_WAIT_MS): Promise<void> {
    if (ticket <= this.#committed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w.resolve !== done);
        reject(new StorageUnavailableError(`the audit entry was not committed within ${timeoutMs / 1000} s`));
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

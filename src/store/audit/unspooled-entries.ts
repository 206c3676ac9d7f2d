/**
 * The entries an AuditThreadWriter handed to its worker without a spool write (receipts alone that
 * nothing waited for; every batch when it has no spool), oldest first, in one decision with no I/O:
 * which of them are still owed (neither chained nor carried by a spool write), under which spool
 * numbers, and how many waits a reply of the worker ends.
 *
 * An owed entry's wait ends when the worker chains it, or when a spool write that carries it
 * returns (takeOwed: the writer then counts it itself). Those taken stay among the unchained, the
 * oldest, until their chain, and are not counted twice. Spool numbers run on without a gap from
 * the first owed entry to the newest handed over: the writer numbers every batch in turn and takes
 * every owed entry into each spool write.
 */
import { PACKED_WIDTH } from '../contracts/index.js';

export class UnspooledEntries {
  /** Handed over without a spool write and not chained yet. */
  #unchained = 0;
  /** The newest of those, neither chained nor taken (packed, PACKED_WIDTH strings each). */
  #owed: string[] = [];
  /** The spool number of the first owed entry. */
  #owedFirstSeq = 0;

  /** Entries neither chained nor carried by a spool write. */
  get owedCount(): number {
    return this.#owed.length / PACKED_WIDTH;
  }

  /** A batch (packed) handed to the worker without a spool write, numbered from `firstSeq` (0 without a spool). */
  handedOver(packed: readonly string[], firstSeq: number): void {
    this.#unchained += packed.length / PACKED_WIDTH;
    if (this.#owed.length === 0) this.#owedFirstSeq = firstSeq;
    for (const s of packed) this.#owed.push(s);
  }

  /** The worker chained the oldest `count` of them: returns how many of those were still owed (their waits end now). */
  chained(count: number): number {
    const owed = this.owedCount;
    const nowCounted = Math.min(owed, Math.max(0, count - (this.#unchained - owed)));
    this.#unchained -= count;
    if (nowCounted > 0) {
      this.#owed.splice(0, nowCounted * PACKED_WIDTH);
      this.#owedFirstSeq += nowCounted;
    }
    return nowCounted;
  }

  /** Takes every owed entry for a spool write (the caller counts their waits once it returns): their first number and packed strings. */
  takeOwed(): { firstSeq: number; packed: string[] } {
    const taken = { firstSeq: this.#owedFirstSeq, packed: this.#owed };
    this.#owed = [];
    return taken;
  }
}

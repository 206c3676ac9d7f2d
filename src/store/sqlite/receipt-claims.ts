/**
 * The queued messages whose `queue.message.enqueued` entry is chained (audit.db
 * `audit_receipt_runs`): a message's entry is chained by the process that acknowledged it and
 * again, from the queue's record, by a reader that cannot know whether that process lived to do it,
 * so each chaining first claims the message, and only the first claim chains.
 *
 * Claims are kept as runs of consecutive ids per queue, never overlapping. A server's writer
 * chains its receipts in batches of hundreds to thousands whose ids, per queue, are consecutive:
 * a batch's claims cost three statements per run of ids (the run containing its first id, the runs
 * inside it, then one extension or insert per hole) instead of one INSERT per message, which was a
 * third of the audit writer's work on a held /enqueue load (measured: `docs/performance.md`,
 * session 32). A run that ends just before the ids claimed is extended, so a queue's steady claims
 * stay one row.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

/** One queued message: its queue (tenant, flow) and its id there. */
export interface ReceiptKey {
  readonly tenant: string;
  readonly flow: string;
  readonly id: number;
}

interface Run {
  first_id: number;
  last_id: number;
}

/** The keys one `claim` claimed: each is taken once, by its first occurrence in the batch. */
export class ClaimedReceipts {
  readonly #ids = new Map<string, Map<string, Set<number>>>();

  /** @internal */
  add(tenant: string, flow: string, first: number, last: number): void {
    let flows = this.#ids.get(tenant);
    if (flows === undefined) this.#ids.set(tenant, (flows = new Map()));
    let ids = flows.get(flow);
    if (ids === undefined) flows.set(flow, (ids = new Set()));
    for (let id = first; id <= last; id++) ids.add(id);
  }

  /** True, once, when `key` was claimed now; false for a key claimed before, or taken already. */
  take(key: ReceiptKey): boolean {
    return this.#ids.get(key.tenant)?.get(key.flow)?.delete(key.id) ?? false;
  }
}

export class ReceiptClaims {
  readonly #containing: Statement<[string, string, number], Run>;
  readonly #inside: Statement<[string, string, number, number], Run>;
  readonly #insert: Statement<[string, string, number, number]>;
  readonly #extend: Statement<[number, string, string, number]>;

  constructor(db: Db) {
    this.#containing = db.prepare<[string, string, number], Run>(
      'SELECT first_id, last_id FROM audit_receipt_runs WHERE tenant = ? AND flow = ? AND first_id <= ? ORDER BY first_id DESC LIMIT 1',
    );
    this.#inside = db.prepare<[string, string, number, number], Run>(
      'SELECT first_id, last_id FROM audit_receipt_runs WHERE tenant = ? AND flow = ? AND first_id > ? AND first_id <= ? ORDER BY first_id',
    );
    this.#insert = db.prepare<[string, string, number, number]>(
      'INSERT INTO audit_receipt_runs (tenant, flow, first_id, last_id) VALUES (?, ?, ?, ?)',
    );
    this.#extend = db.prepare<[number, string, string, number]>(
      'UPDATE audit_receipt_runs SET last_id = ? WHERE tenant = ? AND flow = ? AND first_id = ?',
    );
  }

  /**
   * Claims every key not claimed before (ids are safe integers). Call inside the transaction that
   * chains the entries taken from the answer, so the claims commit with them or not at all.
   */
  claim(keys: Iterable<ReceiptKey>): ClaimedReceipts {
    const byQueue = new Map<string, Map<string, number[]>>();
    for (const k of keys) {
      let flows = byQueue.get(k.tenant);
      if (flows === undefined) byQueue.set(k.tenant, (flows = new Map()));
      const ids = flows.get(k.flow);
      if (ids === undefined) flows.set(k.flow, [k.id]);
      else ids.push(k.id);
    }
    const claimed = new ClaimedReceipts();
    for (const [tenant, flows] of byQueue) {
      for (const [flow, ids] of flows) {
        ids.sort((x, y) => x - y);
        let i = 0;
        while (i < ids.length) {
          // [a, b]: a run of consecutive ids of the batch (repeats folded).
          const a = ids[i]!;
          let b = a;
          while (i < ids.length && ids[i]! <= b + 1) b = Math.max(b, ids[i++]!);
          this.#claimRun(tenant, flow, a, b, claimed);
        }
      }
    }
    return claimed;
  }

  /** Claims the ids of [a, b] outside the runs already held; each hole becomes part of a run. */
  #claimRun(tenant: string, flow: string, a: number, b: number, claimed: ClaimedReceipts): void {
    // The run before the cursor (extended when a hole starts right after it), then those inside [a, b].
    let before: Run | undefined = this.#containing.get(tenant, flow, a);
    let cursor = a;
    if (before !== undefined && before.last_id >= a) cursor = before.last_id + 1;
    const hole = (last: number): void => {
      claimed.add(tenant, flow, cursor, last);
      if (before !== undefined && before.last_id === cursor - 1) {
        this.#extend.run(last, tenant, flow, before.first_id);
        before.last_id = last;
      } else {
        this.#insert.run(tenant, flow, cursor, last);
        before = { first_id: cursor, last_id: last };
      }
    };
    if (cursor <= b) {
      for (const run of this.#inside.all(tenant, flow, a, b)) {
        if (run.first_id > cursor) hole(run.first_id - 1);
        cursor = run.last_id + 1;
        before = run;
      }
      if (cursor <= b) hole(b);
    }
  }
}

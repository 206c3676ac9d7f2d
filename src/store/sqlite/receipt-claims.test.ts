import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrate, openDb, type Db } from './db.js';
import { auditMigrations } from './migrations/audit.js';
import { ReceiptClaims, type ReceiptKey } from './receipt-claims.js';

function setup(): { db: Db; claims: ReceiptClaims } {
  const db = openDb(':memory:', auditMigrations);
  return { db, claims: new ReceiptClaims(db) };
}

const key = (id: number, flow = 'orders', tenant = 'acme'): ReceiptKey => ({ tenant, flow, id });

/** Claims `keys` and answers, in their order, which of them were claimed now (a key's first occurrence only). */
function claimNow(claims: ReceiptClaims, keys: readonly ReceiptKey[]): boolean[] {
  const claimed = claims.claim(keys);
  return keys.map((k) => claimed.take(k));
}

function runs(db: Db): [string, string, number, number][] {
  return (
    db
      .prepare('SELECT tenant, flow, first_id, last_id FROM audit_receipt_runs ORDER BY tenant, flow, first_id')
      .all() as { tenant: string; flow: string; first_id: number; last_id: number }[]
  ).map((r) => [r.tenant, r.flow, r.first_id, r.last_id]);
}

describe('ReceiptClaims: each queued message is claimed once, whoever claims it', () => {
  const cases: { name: string; before: number[][]; batch: number[]; now: boolean[]; after: [number, number][] }[] = [
    { name: 'a first batch', before: [], batch: [1, 2, 3], now: [true, true, true], after: [[1, 3]] },
    {
      name: 'the next batch extends the run',
      before: [[1, 2, 3]],
      batch: [4, 5],
      now: [true, true],
      after: [[1, 5]],
    },
    {
      name: 'an id twice in one batch: its first occurrence',
      before: [],
      batch: [7, 7, 8],
      now: [true, false, true],
      after: [[7, 8]],
    },
    { name: 'ids out of order', before: [], batch: [5, 3, 4], now: [true, true, true], after: [[3, 5]] },
    { name: 'claimed before', before: [[1, 2, 3]], batch: [2], now: [false], after: [[1, 3]] },
    {
      name: 'partly claimed before: the rest only',
      before: [[3, 4]],
      batch: [2, 3, 4, 5],
      now: [true, false, false, true],
      // A hole claimed extends the run before it; runs may touch (they never overlap).
      after: [
        [2, 2],
        [3, 5],
      ],
    },
    {
      name: 'a hole between two runs filled',
      before: [
        [1, 2],
        [5, 6],
      ],
      batch: [3, 4],
      now: [true, true],
      after: [
        [1, 4],
        [5, 6],
      ],
    },
    {
      name: 'a batch across several runs and holes',
      before: [[2], [4, 5], [9]],
      batch: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      now: [true, false, true, false, false, true, true, true, false, true],
      after: [
        [1, 1],
        [2, 3],
        [4, 8],
        [9, 10],
      ],
    },
    {
      name: 'separate ids in one batch',
      before: [],
      batch: [10, 1, 20],
      now: [true, true, true],
      after: [
        [1, 1],
        [10, 10],
        [20, 20],
      ],
    },
    {
      name: 'an older id after a newer run',
      before: [[100, 101]],
      batch: [3],
      now: [true],
      after: [
        [3, 3],
        [100, 101],
      ],
    },
    {
      name: 'the largest safe id',
      before: [],
      batch: [Number.MAX_SAFE_INTEGER],
      now: [true],
      after: [[Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { db, claims } = setup();
      for (const ids of c.before) claims.claim(ids.map((id) => key(id)));
      assert.deepEqual(
        claimNow(
          claims,
          c.batch.map((id) => key(id)),
        ),
        c.now,
      );
      assert.deepEqual(
        runs(db),
        c.after.map(([a, b]) => ['acme', 'orders', a, b]),
      );
    });
  }

  it('the same id in another flow or tenant is another message', () => {
    const { db, claims } = setup();
    assert.deepEqual(claimNow(claims, [key(1), key(1, 'invoices'), key(1, 'orders', 'beta'), key(1)]), [
      true,
      true,
      true,
      false,
    ]);
    assert.equal(runs(db).length, 3);
  });

  it('agrees with a set of every key claimed, over random batches (ids, repeats, order, queues)', () => {
    const { db, claims } = setup();
    const model = new Set<string>();
    let seed = 20261130;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (let round = 0; round < 400; round++) {
      const base = random(300);
      const batch = Array.from({ length: 1 + random(40) }, () =>
        key(base + random(60), random(4) === 0 ? 'invoices' : 'orders', random(5) === 0 ? 'beta' : 'acme'),
      );
      const expected = batch.map((k) => {
        const name = `${k.tenant}/${k.flow}/${k.id}`;
        if (model.has(name)) return false;
        model.add(name);
        return true;
      });
      assert.deepEqual(claimNow(claims, batch), expected, `round ${round}`);
    }
    // The runs hold exactly the keys claimed, each once, and never overlap.
    const held = new Set<string>();
    let last: [string, string, number, number] | undefined;
    for (const r of runs(db)) {
      const [tenant, flow, a, b] = r;
      assert.ok(a <= b);
      if (last !== undefined && last[0] === tenant && last[1] === flow) assert.ok(a > last[3], 'runs overlap');
      for (let id = a; id <= b; id++) held.add(`${tenant}/${flow}/${id}`);
      last = r;
    }
    assert.deepEqual([...held].sort(), [...model].sort());
  });

  it('a claim taken once is not taken again from the same answer', () => {
    const { claims } = setup();
    const claimed = claims.claim([key(1)]);
    assert.equal(claimed.take(key(1)), true);
    assert.equal(claimed.take(key(1)), false);
    assert.equal(claimed.take(key(2)), false);
  });

  it('an audit.db of the one-row-per-message schema keeps its claims, in runs', () => {
    const db = openDb(':memory:', auditMigrations.slice(0, 3));
    const insert = db.prepare('INSERT INTO audit_receipts (tenant, flow, id) VALUES (?, ?, ?)');
    for (const id of [1, 2, 3, 5, 9, 10]) insert.run('acme', 'orders', id);
    insert.run('acme', 'invoices', 4);
    migrate(db, auditMigrations);
    assert.deepEqual(runs(db), [
      ['acme', 'invoices', 4, 4],
      ['acme', 'orders', 1, 3],
      ['acme', 'orders', 5, 5],
      ['acme', 'orders', 9, 10],
    ]);
    const claims = new ReceiptClaims(db);
    assert.deepEqual(claimNow(claims, [key(3), key(4), key(4, 'invoices'), key(11)]), [false, true, false, true]);
  });
});

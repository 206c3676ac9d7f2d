import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { EventRow } from '../contracts/index.js';
import { openDb } from './db.js';
import { logMigrations } from './migrations/log.js';
import { SqliteEventLogStore } from './sqlite-event-log-store.js';

const BLOCK = 8;

function row(i: number, correlation_id: string | null): EventRow {
  return {
    ts: new Date(Date.UTC(2001, 0, 1) + i * 1000).toISOString(),
    correlation_id,
    tenant: 't',
    flow: 'f',
    step: null,
    event: 'received',
    payload: null,
    payload_truncated: 0,
    http_status: null,
    outcome: null,
    reason: null,
  };
}

/** Ids of the rows of `cid`, newest first, through the filters and by a plain scan. */
function both(store: SqliteEventLogStore, file: string, cid: string): { lookup: number[]; scan: number[] } {
  const raw = openDb(file, logMigrations);
  try {
    const scan = raw
      .prepare<[string], number>('SELECT id FROM events WHERE correlation_id = ? ORDER BY id DESC')
      .pluck(true)
      .all(cid);
    return { lookup: store.query({ correlation_id: cid, limit: 10_000 }).map((r) => r.id), scan };
  } finally {
    raw.close();
  }
}

function blooms(file: string): { first_id: number; last_id: number }[] {
  const raw = openDb(file, logMigrations);
  try {
    return raw.prepare('SELECT first_id, last_id FROM correlation_blooms ORDER BY first_id').all() as {
      first_id: number;
      last_id: number;
    }[];
  } finally {
    raw.close();
  }
}

describe('SqliteEventLogStore correlation filters', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bloom-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a filter per complete block, one batch crossing several, and none for the tail', () => {
    const file = join(dir, 'blocks.db');
    const store = SqliteEventLogStore.open(file, { correlationBlockIds: BLOCK });
    store.insertMany(Array.from({ length: 3 * BLOCK + 3 }, (_, i) => row(i, `c${i % 5}`)));
    assert.deepEqual(blooms(file), [
      { first_id: 1, last_id: 8 },
      { first_id: 9, last_id: 16 },
      { first_id: 17, last_id: 24 },
    ]);
    store.insertMany(Array.from({ length: BLOCK - 3 }, (_, i) => row(100 + i, null)));
    assert.equal(blooms(file).length, 4, 'the row that completes a block writes its filter');
    for (const c of ['c0', 'c4', 'nope']) {
      const { lookup, scan } = both(store, file, c);
      assert.deepEqual(lookup, scan, c);
    }
    store.close();
  });

  it('brings an upgraded log (rows, no filter) up on open, and its tail on the next batch', () => {
    const file = join(dir, 'upgrade.db');
    const store = SqliteEventLogStore.open(file, { correlationBlockIds: BLOCK });
    store.insertMany(Array.from({ length: 5 * BLOCK + 2 }, (_, i) => row(i, `u${i % 7}`)));
    store.close();
    const raw = openDb(file, logMigrations);
    raw.exec('DELETE FROM correlation_blooms');
    raw.close();
    const reopened = SqliteEventLogStore.open(file, { correlationBlockIds: BLOCK });
    assert.equal(blooms(file).length, 5);
    reopened.insertMany(Array.from({ length: BLOCK }, (_, i) => row(100 + i, `u${i % 3}`)));
    assert.equal(blooms(file).length, 6);
    for (let c = 0; c < 8; c++) {
      const { lookup, scan } = both(reopened, file, `u${c}`);
      assert.deepEqual(lookup, scan, `u${c}`);
    }
    reopened.close();
  });

  it('a failed batch (rolled back) and another writer in between leave no row unfound', () => {
    const file = join(dir, 'two.db');
    const a = SqliteEventLogStore.open(file, { correlationBlockIds: BLOCK });
    const b = SqliteEventLogStore.open(file, { correlationBlockIds: BLOCK });
    let i = 0;
    for (let round = 0; round < 12; round++) {
      a.insertMany(Array.from({ length: 3 }, () => row(i++, `w${i % 11}`)));
      b.insertMany(Array.from({ length: 5 }, () => row(i++, `w${i % 13}`)));
      if (round % 4 === 1) {
        // event is NOT NULL: the batch's rows and filter work are rolled back together
        const bad = [row(i++, 'lost'), { ...row(i++, 'lost'), event: null as unknown as string }];
        assert.throws(() => a.insertMany(bad));
      }
    }
    for (let c = 0; c < 13; c++) {
      const { lookup, scan } = both(a, file, `w${c}`);
      assert.deepEqual(lookup, scan, `w${c}`);
    }
    assert.deepEqual(both(a, file, 'lost').lookup, []);
    for (const f of blooms(file)) assert.equal(f.last_id - f.first_id + 1, BLOCK);
    a.close();
    b.close();
  });
});

describe('SqliteEventLogStore batches of every size', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-batches-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps every row of a batch, in order and whole, whatever its size against the multi-row statements', () => {
    const file = join(dir, 'sizes.db');
    const store = SqliteEventLogStore.open(file);
    // Around each statement size (128, 32, 8 and 1 rows) and sums of them.
    const sizes = [1, 7, 8, 9, 31, 32, 33, 41, 127, 128, 129, 169, 300, 1000];
    let next = 0;
    for (const size of sizes) {
      store.insertMany(
        Array.from({ length: size }, (_, k) => ({
          ...row(next + k, `s${size}-${k}`),
          http_status: k % 3 === 0 ? 200 : null,
          reason: k % 5 === 0 ? `why ${k}` : null,
          duration_ms: k % 2 === 0 ? k + 0.125 : null,
          failed_step: k % 7 === 0 ? 'check' : null,
        })),
      );
      next += size;
    }
    const raw = openDb(file, logMigrations);
    try {
      const rows = raw
        .prepare('SELECT id, correlation_id, http_status, reason, duration_ms, failed_step FROM events ORDER BY id')
        .all() as {
        id: number;
        correlation_id: string;
        http_status: number | null;
        reason: string | null;
        duration_ms: number | null;
        failed_step: string | null;
      }[];
      assert.equal(rows.length, next);
      let at = 0;
      for (const size of sizes) {
        for (let k = 0; k < size; k++, at++) {
          const r = rows[at]!;
          assert.equal(r.id, at + 1);
          assert.equal(r.correlation_id, `s${size}-${k}`);
          assert.equal(r.http_status, k % 3 === 0 ? 200 : null);
          assert.equal(r.reason, k % 5 === 0 ? `why ${k}` : null);
          assert.equal(r.duration_ms, k % 2 === 0 ? k + 0.125 : null);
          assert.equal(r.failed_step, k % 7 === 0 ? 'check' : null);
        }
      }
    } finally {
      raw.close();
    }
    assert.equal(
      store.countsSince('2000-01-01T00:00:00Z').byEvent.received,
      next,
      'the per-minute counts hold every row',
    );
    store.close();
  });
});

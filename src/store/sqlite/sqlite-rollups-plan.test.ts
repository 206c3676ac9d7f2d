// How log.db answers the rollups the Overview's busiest flows and the Queues page's charts ask for
// (rollupCounts on delivery rows): from the covering index rollups_delivery alone (migration 7),
// never a table read per row; one flow's range from the primary key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDb } from './db.js';
import { logMigrations } from './migrations/log.js';
import { flowTotalsSelect, ROLLUP_COUNT_COLUMNS, rollupSelect, type RollupQuery } from '../contracts/index.js';

function plan(q: RollupQuery, sum?: readonly string[]): string {
  return explain(rollupSelect(q, () => '?', sum));
}

function explain({ sql, args }: { sql: string; args: unknown[] }): string {
  const db = openDb(':memory:', logMigrations);
  try {
    return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[])
      .map((p) => p.detail)
      .join(' | ');
  } finally {
    db.close();
  }
}

const HOUR = { fromMinute: 29_000_000, toMinute: 29_000_060 } as const;

describe('rollups query plans (log.db)', () => {
  it("every flow's delivery counts of an hour come from the covering index", () => {
    assert.match(
      plan({ ...HOUR, level: 'delivery', per: 'window', byFlow: true }, ROLLUP_COUNT_COLUMNS),
      /USING COVERING INDEX rollups_delivery/,
    );
  });

  it("the queue door's counts per minute come from the covering index", () => {
    assert.match(
      plan({ ...HOUR, level: 'delivery', door: 'queue', per: 'minute', byFlow: true }, ROLLUP_COUNT_COLUMNS),
      /USING COVERING INDEX rollups_delivery/,
    );
  });

  it("one flow's rows come from the primary key, counts or whole rows", () => {
    const one = { ...HOUR, tenant: 'acme', flow: 'orders', level: 'delivery', per: 'minute' } as const;
    assert.match(plan(one, ROLLUP_COUNT_COLUMNS), /USING PRIMARY KEY \(tenant=\? AND flow=\?/);
    assert.match(plan(one), /USING PRIMARY KEY \(tenant=\? AND flow=\?/);
  });

  it("flowTotals reads the hour's blocks by their key and the edges' minutes from the covering index", () => {
    const p = explain(flowTotalsSelect(HOUR.fromMinute + 3, HOUR.toMinute + 3, () => '?'));
    assert.match(p, /SEARCH rollup_blocks USING PRIMARY KEY \(block>\? AND block<\?\)/);
    assert.match(p, /SEARCH rollups USING COVERING INDEX rollups_delivery \(minute>\? AND minute<\?\)/);
    assert.doesNotMatch(p, /SCAN rollups|SCAN rollup_blocks/);
  });
});

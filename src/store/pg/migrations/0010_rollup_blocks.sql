-- Each flow's delivery rows (every door) summed per 10 minutes (log.db's migration 10), for
-- flowTotals (src/store/contracts/rollups.ts): the busiest flows of the hour read 7 blocks and a few
-- minutes' rows a flow instead of 60 minutes per flow and door. block = minute - minute % 10.
-- Flows only: no all-flows rows (tenant ''), no step rows. The writers add to a block in the
-- statement that adds its minutes (pg-event-writer.ts); retention takes the minutes it deletes
-- inside a block off it. Filled here from the rollups already written. A node of an older build
-- still writing rollups during a rolling upgrade adds no blocks: its minutes are missing from them.
CREATE TABLE rollup_blocks (
  block bigint NOT NULL,               -- the block's first minute: minute - minute % 10
  tenant text NOT NULL,
  flow text NOT NULL,
  count bigint NOT NULL,
  failures bigint NOT NULL,
  PRIMARY KEY (block, tenant, flow)
);
INSERT INTO rollup_blocks (block, tenant, flow, count, failures)
  SELECT minute - minute % 10, tenant, flow, sum(count), sum(failures)
  FROM rollups WHERE step = '' AND tenant <> '' GROUP BY minute - minute % 10, tenant, flow;

-- The delivery rows' counts in minute order (log.db's migration 7), for rollupCounts
-- (src/store/contracts/rollups.ts): the busiest flows of the hour and the queue charts read every
-- flow's delivery rows of an hour (60,000 with 1,000 busy flows) by an index-only scan, never the
-- step rows (was a bitmap scan of rollups_minute over delivery and step rows, then the heap).
-- Partial: step rows are not in it. `step` is a key column (always '') so the scan answers the
-- select list without the heap. Adding to a row's counts updates its entry here (no HOT update).
CREATE INDEX rollups_delivery ON rollups (minute, tenant, flow, door, step) INCLUDE (count, failures) WHERE step = '';

-- A delivery's terminal row (completed, queue_processed, queue_filtered, dlq_moved) carries its
-- duration in milliseconds (from its entry, or a queued message's enqueue time, to its end) and the
-- step that failed; a queue_failed row carries its attempt's failing step. The Executions page's
-- Deliveries view reads them, one row per delivery. Beyond the spec's row (docs/events.md), as on
-- log.db (migration 6). Nullable, no default: older rows and other kinds keep NULL, and adding the
-- columns to the partitioned table (and every partition) rewrites nothing. No index.
ALTER TABLE events ADD COLUMN duration_ms double precision;
ALTER TABLE events ADD COLUMN failed_step text;

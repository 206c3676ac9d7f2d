-- The structured event log on PostgreSQL (docs/events.md): one row per event, the columns of
-- log.db's `events` table. Written by src/store/pg/pg-event-writer.ts in one multi-row INSERT per
-- batch, read by src/store/pg/pg-event-log-store.ts.
--
-- Range-partitioned by the UTC day of `ts` (ISO 8601 text compared bytewise, COLLATE "C"), so
-- retention drops a whole old day in one statement instead of deleting its rows. The day
-- partitions are named events_YYYYMMDD and created by the writer ahead of their rows (today,
-- tomorrow and every day a batch carries; src/store/pg/pg-event-partitions.ts). A row whose day
-- has no partition (one could not be created then, or its `ts` is not a date) lands in
-- events_default and is never refused; the writer moves such rows into their day's partition when
-- it creates it.
--
-- Ids come from one sequence and every batch is inserted under one advisory lock (class 'SVEV',
-- see pg-event-writer.ts), so ids become visible in the order they were drawn, across every node:
-- a reader that follows the log after the last id it saw (`svc logs --follow`, afterId) never
-- misses a row committed later with a smaller id.
CREATE SEQUENCE events_id_seq AS bigint;

CREATE TABLE events (
  id bigint NOT NULL DEFAULT nextval('events_id_seq'),
  ts text COLLATE "C" NOT NULL,        -- ISO 8601 UTC
  correlation_id text,
  tenant text,
  flow text,
  step text,                           -- never set on boundary events
  event text NOT NULL,                 -- kind: received, completed, queue_processed, ...
  payload text,                        -- JSON text, masked; NULL at log_level event_only
  payload_truncated boolean NOT NULL DEFAULT false,
  http_status integer,
  outcome text,                        -- queue rows: succeeded, fault_handled, ...
  reason text,                         -- access_denied: the operator-facing reason
  trace_id text,                       -- W3C trace id of the delivery
  -- A key of a partitioned table must hold the partition key; led by id, it is also the index
  -- every read orders and pages by (ORDER BY id, id < $n) and retention's slices walk.
  PRIMARY KEY (id, ts)
) PARTITION BY RANGE (ts);
ALTER SEQUENCE events_id_seq OWNED BY events.id;

-- As on SQLite: the only secondary index. None on correlation_id or trace_id (random values, a
-- lookup by them is an operator's scan narrowed by tenant and flow).
CREATE INDEX events_tenant_flow_ts ON events (tenant, flow, ts);

CREATE TABLE events_default PARTITION OF events DEFAULT;

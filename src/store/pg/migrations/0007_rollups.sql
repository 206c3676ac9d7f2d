-- Per-minute rollups of what the service did (src/store/contracts/rollups.ts), the columns of
-- log.db's `rollups` table: per tenant, flow and minute, the deliveries by door (step '') and the
-- runs of each step (door ''), with failures, the summed time and a latency histogram (b0..b14).
-- Every node adds its counts with INSERT ... ON CONFLICT DO UPDATE (pg-event-writer.ts); the
-- charts and the flow diagram's live numbers read them instead of the events. Retention deletes
-- the minutes before its cutoff with the event rows.
CREATE TABLE rollups (
  minute bigint NOT NULL,              -- whole minutes since the epoch, UTC
  tenant text NOT NULL,
  flow text NOT NULL,
  door text NOT NULL,                  -- http, soap, grpc, cron, queue; '' on a step row
  step text NOT NULL,                  -- the step's name; '' on a delivery row
  count bigint NOT NULL,
  failures bigint NOT NULL,
  sum_ms double precision NOT NULL,
  b0 bigint NOT NULL DEFAULT 0, b1 bigint NOT NULL DEFAULT 0, b2 bigint NOT NULL DEFAULT 0,
  b3 bigint NOT NULL DEFAULT 0, b4 bigint NOT NULL DEFAULT 0, b5 bigint NOT NULL DEFAULT 0,
  b6 bigint NOT NULL DEFAULT 0, b7 bigint NOT NULL DEFAULT 0, b8 bigint NOT NULL DEFAULT 0,
  b9 bigint NOT NULL DEFAULT 0, b10 bigint NOT NULL DEFAULT 0, b11 bigint NOT NULL DEFAULT 0,
  b12 bigint NOT NULL DEFAULT 0, b13 bigint NOT NULL DEFAULT 0, b14 bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant, flow, minute, door, step)
);
CREATE INDEX rollups_minute ON rollups (minute);

-- Each queue's figures once a minute (a gauge: the last sample of a minute wins; every node samples
-- the same shared queues), for the Queues page's chart.
CREATE TABLE queue_samples (
  minute bigint NOT NULL,
  tenant text NOT NULL,
  flow text NOT NULL,
  backlog bigint NOT NULL,
  retries bigint NOT NULL,
  processed bigint NOT NULL,
  dead bigint NOT NULL,
  PRIMARY KEY (tenant, flow, minute)
);
CREATE INDEX queue_samples_minute ON queue_samples (minute);

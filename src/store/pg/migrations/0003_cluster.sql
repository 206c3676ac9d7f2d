-- Cluster bookkeeping: each cron tick is claimed once, whichever node's scheduler fires it (the
-- scheduler lock makes one node lead; this row makes a tick fired twice around a hand-over run once).
CREATE TABLE schedule_ticks (
  tenant text NOT NULL,
  flow text NOT NULL,
  tick_at text NOT NULL,                 -- the tick's scheduled instant, ISO 8601 UTC (whole seconds)
  node text NOT NULL,                    -- who ran it (host:pid), for the operator
  PRIMARY KEY (tenant, flow, tick_at)
);

-- How far the registry change log has been pruned: a node whose copy is older than this reads
-- the registry whole again instead of the changes it could no longer see (PgRegistryMirror).
CREATE TABLE registry_changes_horizon (
  id integer PRIMARY KEY CHECK (id = 1),
  below bigint NOT NULL                  -- every change with seq < below may be gone
);

-- The durable queues on PostgreSQL (src/queue/pg/): one row per message while it waits, its
-- retry schedule in the same row, dead letters beside them. Acknowledged messages are deleted.

-- The id counter of each queue. An append batch takes the row's lock from its UPDATE to its
-- COMMIT, so the ids of one queue commit in the order they were drawn, and are never reissued.
CREATE TABLE queue_heads (
  tenant text NOT NULL,
  flow text NOT NULL,
  next_id bigint NOT NULL,
  PRIMARY KEY (tenant, flow)
);

CREATE TABLE queue_messages (
  tenant text NOT NULL,
  flow text NOT NULL,
  id bigint NOT NULL,
  correlation_id text NOT NULL,
  enqueued_at text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,   -- attempts consumed
  payload text NOT NULL,                 -- JSON
  traceparent text,
  tracestate text,
  due_ms bigint,                         -- NULL: waiting for its first delivery; else a retry due then (epoch ms)
  PRIMARY KEY (tenant, flow, id)
);
CREATE INDEX queue_messages_fresh ON queue_messages (tenant, flow, id) WHERE due_ms IS NULL;
CREATE INDEX queue_messages_retries ON queue_messages (tenant, flow, due_ms, id) WHERE due_ms IS NOT NULL;

-- Pending dead letters; replay and discard delete the row (a replay in the same transaction as the
-- new message it appends). The correlation id is not kept, as in the state directory's files.
CREATE TABLE queue_dead_letters (
  tenant text NOT NULL,
  flow text NOT NULL,
  id bigint NOT NULL,
  payload text NOT NULL,
  enqueued_at text NOT NULL,
  failed_at text NOT NULL,
  attempts integer NOT NULL,
  last_error text NOT NULL,
  seq bigserial NOT NULL,                -- the order they died in
  PRIMARY KEY (tenant, flow, id)
);

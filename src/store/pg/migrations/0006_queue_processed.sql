-- How many messages of each queue finished their delivery (acknowledged: the flow completed, a
-- condition filtered it, or a fault handler succeeded; at the first delivery or a retry), for the
-- queue's `processed` figure. Dead letters and attempts that failed are not counted. Kept apart
-- from queue_heads, whose row an append batch holds locked until its COMMIT: the worker's acks
-- would wait for appends. Written by the same statement that deletes the acknowledged rows.
CREATE TABLE queue_processed (
  tenant text NOT NULL,
  flow text NOT NULL,
  processed bigint NOT NULL,
  PRIMARY KEY (tenant, flow)
);

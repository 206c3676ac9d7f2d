-- The guard of `svc dev` on a store (docs/dev.md): svc dev publishes every saved flow into the
-- store it is given, so it runs only on a store marked as a development one by this row (written
-- on a first run into an empty store, or by `svc dev --init`). The counterpart of the `dev-state`
-- file of a state directory. Delete the row to make svc dev refuse the store again.
CREATE TABLE dev_state (
  id integer PRIMARY KEY CHECK (id = 1),
  marked_at text NOT NULL,               -- ISO 8601 UTC
  note text NOT NULL                     -- who marked it and why, for the operator reading the table
);

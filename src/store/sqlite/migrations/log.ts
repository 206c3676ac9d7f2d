/** Schema of the log database (`log.db`): one row per structured log event. */
import type { Migration } from '../db.js';

export const logMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'events',
    sql: `
      CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts TEXT NOT NULL,                    -- ISO 8601 UTC
        correlation_id TEXT,
        tenant TEXT,
        flow TEXT,
        step TEXT,                           -- never set on boundary events
        event TEXT NOT NULL,                 -- kind: received, completed, queue_processed, ...
        payload TEXT,                        -- JSON text, masked; NULL at log_level event_only
        payload_truncated INTEGER NOT NULL DEFAULT 0,
        http_status INTEGER,
        outcome TEXT,                        -- queue rows: succeeded, fault_handled, ...
        reason TEXT                          -- access_denied: the operator-facing reason
      );
      CREATE INDEX events_ts ON events(ts);
      CREATE INDEX events_tenant_flow_ts ON events(tenant, flow, ts);
      CREATE INDEX events_correlation ON events(correlation_id);
    `,
  },
  {
    version: 2,
    name: 'drop-ts-index',
    // Retention finds its cut by row id (rows are appended in time order); one index less per insert.
    sql: 'DROP INDEX IF EXISTS events_ts;',
  },
  {
    version: 3,
    name: 'drop-correlation-index',
    // Correlation ids are random (UUID v4 by default): every batch dirtied pages all over that
    // index, and journalling them was most of the event writer's CPU (measured: 35% of a core at
    // 7.7k requests/s; 16% at 10.3k without it). A lookup by correlation id is an operator's
    // question, answered by a scan, narrowed by tenant and flow through events_tenant_flow_ts.
    sql: 'DROP INDEX IF EXISTS events_correlation;',
  },
  {
    version: 4,
    name: 'trace-id',
    // The W3C trace id of the delivery a row belongs to (docs/observability.md). Nullable: rows
    // outside a delivery have none, and rows written before this migration keep NULL. No index:
    // like the correlation id it is random, and a lookup by it is an operator's scan.
    sql: 'ALTER TABLE events ADD COLUMN trace_id TEXT;',
  },
  {
    version: 5,
    name: 'rollups',
    // Per-minute counts and latency histograms per tenant, flow and door (step '') or step (door
    // ''), added to by the writer thread (contracts/rollups.ts). The charts and the diagram's live
    // numbers read them instead of the events. Keyed for one flow's range; minute for all flows'.
    sql: `
      CREATE TABLE rollups (
        minute INTEGER NOT NULL,             -- whole minutes since the epoch, UTC
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        door TEXT NOT NULL,                  -- http, soap, grpc, cron, queue; '' on a step row
        step TEXT NOT NULL,                  -- the step's name; '' on a delivery row
        count INTEGER NOT NULL,
        failures INTEGER NOT NULL,
        sum_ms REAL NOT NULL,
        ${Array.from({ length: 15 }, (_, i) => `b${i} INTEGER NOT NULL DEFAULT 0`).join(',\n        ')},
        PRIMARY KEY (tenant, flow, minute, door, step)
      ) WITHOUT ROWID;
      CREATE INDEX rollups_minute ON rollups(minute);
      -- Each queue's figures once a minute (a gauge: the last sample of a minute wins), for the
      -- Queues page's chart: backlog, retries scheduled, processed (as QueueStats counts it), dead letters.
      CREATE TABLE queue_samples (
        minute INTEGER NOT NULL,
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        backlog INTEGER NOT NULL,
        retries INTEGER NOT NULL,
        processed INTEGER NOT NULL,
        dead INTEGER NOT NULL,
        PRIMARY KEY (tenant, flow, minute)
      ) WITHOUT ROWID;
      CREATE INDEX queue_samples_minute ON queue_samples(minute);
    `,
  },
  {
    version: 6,
    name: 'event-duration',
    // A delivery's terminal row (completed, queue_processed, queue_filtered, dlq_moved) carries its
    // duration in milliseconds and the step that failed, which the Executions page's Deliveries
    // view shows one row per delivery; a queue_failed row carries its attempt's failing step.
    // Beyond the spec's row (docs/events.md). Nullable: older rows and other kinds keep NULL. No index.
    sql: `
      ALTER TABLE events ADD COLUMN duration_ms REAL;
      ALTER TABLE events ADD COLUMN failed_step TEXT;
    `,
  },
  {
    version: 7,
    name: 'rollups-delivery-index',
    // The delivery rows' counts in minute order, for rollupCounts (contracts/rollups.ts): the
    // busiest flows of the hour and the queue charts read every flow's delivery rows of an hour
    // (60,000 with 1,000 busy flows) from this index alone, never the table, and never the step
    // rows (was rollups_minute, then a table read per row: with bench:ui's day of 1,000 busy flows,
    // 330 ms for the busiest flows' totals, 70 ms from this index, most of it the GROUP BY's sort).
    // Partial: step rows are not in it. The writer keeps it as it adds to the rows.
    sql: `
      CREATE INDEX rollups_delivery ON rollups(minute, tenant, flow, door, step, count, failures) WHERE step = '';
    `,
  },
  {
    version: 8,
    name: 'event-counts',
    // Rows per minute and kind, with the `completed` rows of status 400 or more, for countsSince
    // (the Overview's last hour): the hour is 60 minutes of a few kinds here instead of a GROUP BY
    // over its rows (360,000 in bench:ui, 134-205 ms, mostly the sort). minute is ts's first 16
    // characters ('YYYY-MM-DDTHH:MM'). The writer adds each batch's rows in the batch's transaction
    // and retention subtracts the rows it deletes in the delete's, so the counts are always the
    // rows' (sqlite-event-log-store.ts). Filled here from the rows already written, so an upgraded
    // log answers as before (about 1 s a million rows, once).
    sql: `
      CREATE TABLE event_counts (
        minute TEXT NOT NULL,                -- substr(ts, 1, 16): 'YYYY-MM-DDTHH:MM'
        event TEXT NOT NULL,
        n INTEGER NOT NULL,                  -- rows of that minute and kind
        failed INTEGER NOT NULL,             -- of them, completed rows with http_status >= 400
        PRIMARY KEY (minute, event)
      ) WITHOUT ROWID;
      INSERT INTO event_counts (minute, event, n, failed)
        SELECT substr(ts, 1, 16), event, count(*), sum(CASE WHEN event = 'completed' AND http_status >= 400 THEN 1 ELSE 0 END)
        FROM events GROUP BY substr(ts, 1, 16), event;
    `,
  },
  {
    version: 9,
    name: 'correlation-blooms',
    // A Bloom filter of the correlation ids of each complete block of rows (correlation-bloom.ts),
    // so a lookup by correlation id scans only the blocks that may hold it and the incomplete last
    // block, instead of every row: without an index, which random ids would make the writer's most
    // expensive write (migration 3). A block is every id from first_id to last_id (its size is the
    // writer's, in sqlite-event-log-store.ts; a reader needs only these bounds). The writer adds a
    // block's filter in the transaction of the row that completes it; filters of blocks that have
    // none (an upgraded log's) are built when the writer opens the log, not here.
    sql: `
      CREATE TABLE correlation_blooms (
        first_id INTEGER PRIMARY KEY,        -- the block's first row id
        last_id INTEGER NOT NULL,            -- its last: the block is every id in between
        bits BLOB NOT NULL                   -- the filter of its rows' correlation ids
      );
    `,
  },
  {
    version: 10,
    name: 'rollup-blocks',
    // Each flow's delivery rows (every door) summed per 10 minutes, for flowTotals (the busiest
    // flows of the hour, contracts/rollups.ts): an hour is 7 blocks and a few minutes' rows a flow
    // instead of 60 minutes per flow and door (60,000 rows with 1,000 busy flows, most of the
    // Overview's time in the GROUP BY's sort). block = minute - minute % 10. Flows only: no
    // all-flows rows (tenant ''), no step rows. The writer adds to a block in the transaction that
    // adds its minutes; retention takes the minutes it deletes inside a block off it. Filled here
    // from the rollups already written.
    sql: `
      CREATE TABLE rollup_blocks (
        block INTEGER NOT NULL,              -- the block's first minute: minute - minute % 10
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        count INTEGER NOT NULL,
        failures INTEGER NOT NULL,
        PRIMARY KEY (block, tenant, flow)
      ) WITHOUT ROWID;
      INSERT INTO rollup_blocks (block, tenant, flow, count, failures)
        SELECT minute - minute % 10, tenant, flow, sum(count), sum(failures)
        FROM rollups WHERE step = '' AND tenant <> '' GROUP BY minute - minute % 10, tenant, flow;
    `,
  },
];

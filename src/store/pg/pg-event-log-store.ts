/**
 * The structured event log's read side in the PostgreSQL store (migration 0003), answering exactly
 * as SqliteEventLogStore does on log.db: the same filters, limits, order by id and row shape. Rows are
 * written by EventLog through pg-event-writer.ts.
 */
import type { EventRow } from '../contracts/index.js';
import type { PgTx } from './pg-db.js';
import {
  exactMatches,
  kindList,
  statusRange,
  toEventCounts,
  toStoredEvent,
  TRACE_KINDS_SQL,
  type EventCounts,
  type EventLogStore,
  type EventQuery,
  type StoredEvent,
  type TraceQuery,
  rollupFromRecord,
  rollupCountFromRecord,
  ROLLUP_COUNT_COLUMNS,
  rollupSelect,
  queueSampleFromRecord,
  queueSampleSelect,
  type QueueSample,
  type QueueSampleQuery,
  type RollupCount,
  type RollupPoint,
  type RollupQuery,
  flowTotalFromRecord,
  flowTotalsSelect,
  type EdgeRead,
  type FlowTotal,
} from '../contracts/index.js';

/** log.db's columns in its order, the flag as 0/1, so the SQLite row mapper serves both stores. */
const COLUMNS =
  'id, ts, correlation_id, tenant, flow, step, event, payload, payload_truncated::int AS payload_truncated, http_status, outcome, reason, trace_id, duration_ms, failed_step';

/**
 * SqliteEventLogStore's binary search over ids for the first row not older than $1, in one statement: each
 * step reads the `ts` of the first row at or past the middle id through the (id, ts) key. About
 * log2(rows) probes, where `min(id) WHERE ts >= $1` would read every row of the day before $1. The
 * same answer as on SQLite, also when rows are not in time order.
 */
const FIRST_ID_AT_OR_AFTER_SQL = `WITH RECURSIVE search(lo, hi) AS (
  SELECT (SELECT min(id) FROM events), (SELECT max(id) FROM events) + 1
  UNION ALL
  SELECT CASE WHEN probe.ts < $1 THEN m.mid + 1 ELSE s.lo END, CASE WHEN probe.ts < $1 THEN s.hi ELSE m.mid END
  FROM search s
  CROSS JOIN LATERAL (SELECT (s.lo + s.hi) / 2 AS mid) m
  LEFT JOIN LATERAL (SELECT ts FROM events WHERE id >= m.mid ORDER BY id LIMIT 1) probe ON true
  WHERE s.lo < s.hi
) SELECT coalesce(lo, 0) AS id FROM search WHERE lo IS NULL OR lo >= hi`;

const pgParam = (n: number): string => `$${n}`;

/** Adds `<lhs> $n` for `value` (lhs is a constant of this file, never input). */
function addCondition(where: string[], args: unknown[], lhs: string, value: unknown): void {
  args.push(value);
  where.push(`${lhs} $${args.length}`);
}

export class PgEventLogStore implements EventLogStore {
  constructor(private readonly db: PgTx) {}

  async query(q: EventQuery = {}): Promise<StoredEvent[]> {
    const where: string[] = [`event NOT IN (${TRACE_KINDS_SQL})`];
    const args: unknown[] = [];
    exactMatches(q, ['tenant', 'flow', 'event', 'correlation_id', 'http_status'], where, args, pgParam);
    kindList(q, where, args, pgParam);
    statusRange(q, where, args, pgParam);
    if (q.beforeId !== undefined) addCondition(where, args, 'id <', q.beforeId);
    if (q.afterId !== undefined) addCondition(where, args, 'id >', q.afterId);
    // Bounds on ts become bounds on ids, as on SQLite (rows are appended in time order).
    if (q.since !== undefined) addCondition(where, args, 'id >=', await this.firstIdAtOrAfter(q.since));
    if (q.until !== undefined) addCondition(where, args, 'id <', await this.firstIdAtOrAfter(`${q.until}\uffff`));
    const limit = Math.max(1, Math.min(q.limit ?? 100, 10_000));
    return this.#select(
      `SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY id ${q.oldestFirst === true ? 'ASC' : 'DESC'} LIMIT ${limit}`,
      args,
    );
  }

  /** Trace rows, oldest first; `readable` false goes into the statement, which then selects nothing. */
  async queryTrace(q: TraceQuery, readable: boolean): Promise<StoredEvent[]> {
    const where: string[] = [`event IN (${TRACE_KINDS_SQL})`, '$1::boolean'];
    const args: unknown[] = [readable];
    exactMatches(q, ['tenant', 'flow', 'correlation_id'], where, args, pgParam);
    if (q.afterId !== undefined) addCondition(where, args, 'id >', q.afterId);
    if (q.since !== undefined) {
      // The id bound (a binary search, as query's) spares the scan of every older row; ts stays exact.
      addCondition(where, args, 'id >=', await this.firstIdAtOrAfter(q.since));
      addCondition(where, args, 'ts >=', q.since);
    }
    if (q.until !== undefined) addCondition(where, args, 'ts <=', q.until);
    const limit = Math.max(1, Math.min(q.limit ?? 1000, 10_000));
    return this.#select(`SELECT ${COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY id LIMIT ${limit}`, args);
  }

  async #select(sql: string, args: unknown[]): Promise<StoredEvent[]> {
    return (await this.db.query<EventRow & { id: number }>(sql, args)).rows.map(toStoredEvent);
  }

  async countsSince(iso: string): Promise<EventCounts> {
    const from = await this.firstIdAtOrAfter(iso);
    const r = await this.db.query<{ event: string; n: number; failed: number }>(
      `SELECT event, count(*) AS n, count(*) FILTER (WHERE event = 'completed' AND http_status >= 400) AS failed FROM events WHERE id >= $1 GROUP BY event`,
      [from],
    );
    return toEventCounts(r.rows);
  }

  async lastId(): Promise<number> {
    return (await this.db.query<{ id: number }>('SELECT coalesce(max(id), 0) AS id FROM events')).rows[0]?.id ?? 0;
  }

  async firstIdAtOrAfter(iso: string): Promise<number> {
    return (await this.db.query<{ id: number }>(FIRST_ID_AT_OR_AFTER_SQL, [iso])).rows[0]?.id ?? 0;
  }

  async queueSamples(q: QueueSampleQuery): Promise<QueueSample[]> {
    const { sql, args } = queueSampleSelect(q, (n) => `$${n}`);
    return (await this.db.query<Record<string, unknown>>(sql, args)).rows.map(queueSampleFromRecord);
  }

  async rollups(q: RollupQuery): Promise<RollupPoint[]> {
    const { sql, args } = rollupSelect(q, (n) => `$${n}`);
    return (await this.db.query<Record<string, unknown>>(sql, args)).rows.map(rollupFromRecord);
  }

  async rollupCounts(q: RollupQuery): Promise<RollupCount[]> {
    const { sql, args } = rollupSelect(q, (n) => `$${n}`, ROLLUP_COUNT_COLUMNS);
    return (await this.db.query<Record<string, unknown>>(sql, args)).rows.map(rollupCountFromRecord);
  }

  async flowTotals(
    fromMinute: number,
    toMinute: number,
    edges?: { lead: EdgeRead; trail: EdgeRead },
  ): Promise<FlowTotal[]> {
    const { sql, args } = flowTotalsSelect(fromMinute, toMinute, (n) => `$${n}`, edges);
    return (await this.db.query<Record<string, unknown>>(sql, args)).rows.map(flowTotalFromRecord);
  }
}

/** The recorded deliveries of a flow, read from the event log's trace rows and boundary rows. */
import { isEntryRow, type RecordedDelivery } from '../testing/recorded-example.js';
import type { EventLogStore } from '../../store/contracts/index.js';

export type { EventLogStore };

/** Which deliveries of a flow. */
export interface ReplayQuery {
  readonly tenant: string;
  readonly flow: string;
  /** ISO 8601 UTC: deliveries that arrived at or after it. */
  readonly since?: string;
  readonly correlationId?: string;
  /** Only the last N deliveries found. */
  readonly last?: number;
}

/** Trace rows read at most while looking for deliveries (the log keeps what tracing recorded). */
const SCAN_ROWS = 100_000;

/** Each delivery's rows, oldest delivery first; its first traced entry row marks it. */
export async function* recordedDeliveryRows(log: EventLogStore, q: ReplayQuery): AsyncGenerator<RecordedDelivery> {
  let ids: string[];
  if (q.correlationId !== undefined) ids = [q.correlationId];
  else {
    const rows = await log.queryTrace({ tenant: q.tenant, flow: q.flow, since: q.since, limit: SCAN_ROWS }, true);
    const seen = new Set<string>();
    for (const r of rows) if (isEntryRow(r) && r.correlation_id !== null) seen.add(r.correlation_id);
    ids = [...seen];
    if (q.last !== undefined) ids = ids.slice(-q.last);
  }
  for (const correlationId of ids) {
    const traceRows = await log.queryTrace({ tenant: q.tenant, correlation_id: correlationId, limit: 1000 }, true);
    const logRows = await log.query({ tenant: q.tenant, flow: q.flow, correlation_id: correlationId, limit: 100 });
    yield { tenant: q.tenant, flow: q.flow, correlationId, traceRows, logRows };
  }
}

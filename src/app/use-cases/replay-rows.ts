/**
 * The recorded deliveries of a flow, read from the event log's trace rows and boundary rows. A
 * window is read in one pass of pages (the log has no index by correlation id, so a lookup per
 * delivery would scan the tenant's rows once per delivery), grouped by correlation id in memory.
 */
import { isEntryRow, type RecordedDelivery } from '../testing/recorded-example.js';
import type { EventLogStore, StoredEvent } from '../../store/contracts/index.js';

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

/** The most deliveries one replay from the UI runs (it runs in the server's process, beside its traffic). */
export const UI_REPLAY_MAX = 200;

/** Rows read per query: the stores' ceiling. */
const PAGE = 10_000;

/** Each delivery's rows, oldest delivery first; its first traced entry row of the flow marks it. */
export async function* recordedDeliveryRows(log: EventLogStore, q: ReplayQuery): AsyncGenerator<RecordedDelivery> {
  const { tenant, flow } = q;
  if (q.correlationId !== undefined) {
    const correlationId = q.correlationId;
    const traceRows = await all((afterId) =>
      log.queryTrace({ tenant, correlation_id: correlationId, afterId, limit: PAGE }, true),
    );
    const logRows = await all((afterId) =>
      log.query({ tenant, flow, correlation_id: correlationId, afterId, oldestFirst: true, limit: PAGE }),
    );
    yield { tenant, flow, correlationId, traceRows, logRows };
    return;
  }
  // A delivery's rows begin with its entry row: rows of its correlation id before that are another
  // delivery's (a reused id), and the rows of the flows it calls come after it.
  const traced = new Map<string, StoredEvent[]>();
  for await (const r of pages((afterId) => log.queryTrace({ tenant, since: q.since, afterId, limit: PAGE }, true))) {
    if (r.correlation_id === null) continue;
    const rows = traced.get(r.correlation_id);
    if (rows !== undefined) rows.push(r);
    else if (r.flow === flow && isEntryRow(r)) traced.set(r.correlation_id, [r]);
  }
  let ids = [...traced.keys()];
  if (q.last !== undefined) ids = ids.slice(-q.last);
  const wanted = new Map(ids.map((id) => [id, [] as StoredEvent[]]));
  for await (const r of pages((afterId) =>
    log.query({ tenant, flow, since: q.since, afterId, oldestFirst: true, limit: PAGE }),
  ))
    if (r.correlation_id !== null) wanted.get(r.correlation_id)?.push(r);
  for (const correlationId of ids)
    yield { tenant, flow, correlationId, traceRows: traced.get(correlationId)!, logRows: wanted.get(correlationId)! };
}

/** Every row a paged read gives, page after page (each after the last id of the one before). */
async function* pages(
  read: (afterId: number | undefined) => Promise<StoredEvent[]> | StoredEvent[],
): AsyncGenerator<StoredEvent> {
  let afterId: number | undefined;
  for (;;) {
    const rows = await read(afterId);
    yield* rows;
    if (rows.length < PAGE) return;
    afterId = rows.at(-1)!.id;
  }
}

async function all(
  read: (afterId: number | undefined) => Promise<StoredEvent[]> | StoredEvent[],
): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for await (const r of pages(read)) out.push(r);
  return out;
}

/**
 * Searching the structured event log: the one reader behind the UI's Executions page and `svc logs`.
 * Trace rows (`step_traced`, `egress_traced`) are never part of it: only the support role reads
 * them, through `readTraceRows` (src/app/use-cases/trace.ts, docs/tracing.md).
 */
import { durationMs } from '../../common/duration.js';
import { SvcError } from '../../common/errors.js';
import { EVENT_KINDS, TRACE_EVENTS, type EventLogStore, type StoredEvent } from '../../store/contracts/index.js';

/** Exact-match filters and time bounds of a log search; every field is optional. */
export interface LogFilter {
  readonly tenant?: string;
  readonly flow?: string;
  readonly event?: string;
  readonly correlation_id?: string;
  readonly http_status?: number;
  /** Inclusive lower bound on `ts`, ISO 8601 UTC (a prefix such as `2026-01-31T08:00` works too). */
  readonly since?: string;
  /** Inclusive upper bound on `ts`, ISO 8601 UTC or a prefix of one. */
  readonly until?: string;
}

/** Rows one read returns at most, whatever the caller asks for (the repo's own ceiling). */
export const MAX_ROWS_PER_READ = 10_000;

/**
 * Refuses a search for a trace kind: the log search would return nothing for it anyway, and the
 * caller should learn where those rows are read.
 * @throws SvcError SVC_ERR_INVALID_INPUT naming the kind
 */
export function refuseTraceKind(event: string | undefined): void {
  if (event !== undefined && TRACE_EVENTS.has(event)) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `${event} rows are trace rows, not part of the log search; only the support role reads them, on the UI's Traces page (docs/tracing.md)`,
    );
  }
}

/**
 * An event kind as an operator filters by it: a kind the log holds, never a trace kind.
 * @throws SvcError SVC_ERR_INVALID_INPUT naming the kinds there are
 */
export function checkEventKind(event: string): string {
  refuseTraceKind(event);
  const kinds = EVENT_KINDS.filter((k) => !TRACE_EVENTS.has(k));
  if (!(kinds as readonly string[]).includes(event))
    throw new SvcError('SVC_ERR_INVALID_INPUT', `unknown event kind "${event}"; the log holds ${kinds.join(', ')}`);
  return event;
}

/**
 * One page of matching rows, newest first.
 * @param page.beforeId only rows older than this id (the last id of the previous page)
 * @param page.limit most rows; capped at MAX_ROWS_PER_READ
 */
export async function searchEvents(
  log: EventLogStore,
  filter: LogFilter,
  page: { beforeId?: number; limit: number },
): Promise<StoredEvent[]> {
  refuseTraceKind(filter.event);
  return log.query({ ...filter, beforeId: page.beforeId, limit: Math.min(page.limit, MAX_ROWS_PER_READ) });
}

/**
 * Matching rows written after row `afterId` (and not after `upToId`, when given), oldest first, at
 * most `limit` of them: the next batch of a reader that walks or follows the log. Rows get
 * increasing ids as they are committed, so a reader that passes the last id it printed sees every
 * later row exactly once.
 */
export async function eventsAfter(
  log: EventLogStore,
  filter: LogFilter,
  afterId: number,
  limit: number,
  upToId?: number,
): Promise<StoredEvent[]> {
  refuseTraceKind(filter.event);
  return log.query({
    ...filter,
    afterId,
    beforeId: upToId === undefined ? undefined : upToId + 1,
    oldestFirst: true,
    limit: Math.min(limit, MAX_ROWS_PER_READ),
  });
}

/** Rows a tail reads per query while it looks for its start: memory stays bounded whatever `limit` is. */
const TAIL_PAGE_ROWS = 100;

/**
 * Where a tail of the newest `limit` matching rows starts: print `eventsAfter(afterId, ..., lastId)`
 * batch by batch, then follow after `lastId`. `lastId` is read first, so a row committed meanwhile
 * is followed, never lost or shown twice. The search pages back `TAIL_PAGE_ROWS` rows at a time.
 */
export async function tailStart(
  log: EventLogStore,
  filter: LogFilter,
  limit: number,
): Promise<{ afterId: number; lastId: number }> {
  refuseTraceKind(filter.event);
  const lastId = await log.lastId();
  let afterId = lastId;
  let left = limit;
  while (left > 0) {
    const page = await searchEvents(log, filter, { beforeId: afterId + 1, limit: Math.min(left, TAIL_PAGE_ROWS) });
    if (page.length === 0) break;
    afterId = page.at(-1)!.id - 1;
    if (page.length < Math.min(left, TAIL_PAGE_ROWS)) break;
    left -= page.length;
  }
  return { afterId, lastId };
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(\.\d+)?)?Z$/;

/**
 * Reads a `since` bound as an operator writes it: a duration back from `nowMs` (`30s`, `10m`, `2h`,
 * `7d`), a UTC day (`2026-01-31`, its midnight) or a UTC instant (`2026-01-31T08:00Z`,
 * `2026-01-31T08:00:00Z`). Returns the form log rows carry, `YYYY-MM-DDTHH:MM:SSZ`.
 * @throws SvcError SVC_ERR_INVALID_INPUT for anything else (an offset other than Z, an impossible date)
 */
export function parseSince(text: string, nowMs: number = Date.now()): string {
  const value = text.trim();
  const back = durationMs(value);
  if (back !== undefined) return toRowTs(new Date(nowMs - back));
  const iso = DAY.test(value)
    ? `${value}T00:00:00Z`
    : INSTANT.test(value)
      ? value.replace(INSTANT, (_m, hm: string, s?: string) => `${hm}${s === undefined ? ':00' : s.slice(0, 3)}Z`)
      : undefined;
  const at = iso === undefined ? undefined : new Date(iso);
  // A date that rolls over (February 30th) is refused rather than read as another day.
  if (iso === undefined || at === undefined || Number.isNaN(at.getTime()) || toRowTs(at) !== iso) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `--since must be a duration (30s, 10m, 2h, 7d), a UTC day (2026-01-31) or a UTC instant (2026-01-31T08:00:00Z), got "${text}"`,
    );
  }
  return iso;
}

/** `YYYY-MM-DDTHH:MM:SSZ`, the `ts` form of a log row. */
function toRowTs(at: Date): string {
  return `${at.toISOString().slice(0, 19)}Z`;
}

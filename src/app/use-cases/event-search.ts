/**
 * Searching the structured event log: the one reader behind the UI's Executions page and `svc logs`.
 * Trace rows (`step_traced`, `egress_traced`) are never part of it: only the support role reads
 * them, through `readTraceRows` (src/app/use-cases/trace.ts, docs/tracing.md).
 *
 * The filters are read here, for both doors: a value this module cannot read is refused, naming
 * the field and what it accepts, never dropped (a dropped filter would widen the search).
 */
import { durationMs } from '../../common/duration.js';
import { ErrorCodes, SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';
import {
  EVENT_KINDS,
  TERMINAL_EVENTS,
  TRACE_EVENTS,
  type EventLogStore,
  type EventQuery,
  type StoredEvent,
} from '../../store/contracts/index.js';

/** An inclusive range of HTTP statuses: one status (404 to 404), a class (400 to 499) or any range. */
export interface StatusRange {
  readonly min: number;
  readonly max: number;
}

/** Exact-match filters and time bounds of a log search; every field is optional. */
export interface LogFilter {
  readonly tenant?: string;
  readonly flow?: string;
  readonly event?: string;
  readonly correlation_id?: string;
  /** Rows whose `http_status` lies in the range (rows without one never match). */
  readonly status?: StatusRange;
  /** Inclusive lower bound on `ts`, ISO 8601 UTC (`parseSince` gives it with milliseconds). */
  readonly since?: string;
  /** Inclusive upper bound on `ts`: an ISO 8601 UTC instant or a prefix of one (`parseUntil`); every row the prefix starts is in. */
  readonly until?: string;
}

/** The filter fields as a form or a command line carries them: text, each optional, empty meaning "any". */
export interface LogFilterText {
  readonly tenant?: string;
  readonly flow?: string;
  readonly event?: string;
  readonly correlation_id?: string;
  readonly status?: string;
  readonly since?: string;
  readonly until?: string;
}

/**
 * Reads every field of a search as an operator wrote it (empty fields are "any"). Every field is
 * checked, and all the refusals are given at once, each naming its field and what it accepts.
 * @param nowMs the instant durations (`1h`) count back from
 * @throws SvcError SVC_ERR_INVALID_INPUT listing every refused field
 */
export function readLogFilter(text: LogFilterText, nowMs: number = Date.now()): LogFilter {
  const problems: string[] = [];
  const read = <T>(value: string | undefined, parse: (v: string) => T): T | undefined => {
    if (value === undefined || value.trim() === '') return undefined;
    try {
      return parse(value);
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      problems.push(err.message);
      return undefined;
    }
  };
  const filter: LogFilter = {
    tenant: read(text.tenant, (v) => checkName('tenant', v)),
    flow: read(text.flow, (v) => checkName('flow', v)),
    event: read(text.event, checkEventKind),
    correlation_id: read(text.correlation_id, (v) => v.trim()),
    status: read(text.status, (v) => parseStatus(v, 'status')),
    since: read(text.since, (v) => parseSince(v, nowMs, 'since')),
    until: read(text.until, (v) => parseUntil(v, nowMs, 'until')),
  };
  if (problems.length > 0) throw new SvcError('SVC_ERR_INVALID_INPUT', problems.join('; '));
  return filter;
}

/** A tenant or flow to filter by: the name rule's sentence when it breaks it. */
function checkName(what: 'tenant' | 'flow', value: string): string {
  const problem = describeNameProblem(what, value);
  if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
  return value;
}

const STATUS = /^[1-5]\d\d$/;
const STATUS_CLASS = /^([1-5])xx$/;
const STATUS_RANGE = /^([1-5]\d\d)-([1-5]\d\d)$/;

/**
 * Reads a status filter: an HTTP status from 100 to 599 (`404`), a class (`4xx`) or an inclusive
 * range (`400-599`, what the Overview counts as a failed run).
 * @param field how the message names the field (`status`, `--status`)
 * @throws SvcError SVC_ERR_INVALID_INPUT for anything else
 */
export function parseStatus(text: string, field = 'status'): StatusRange {
  const value = text.trim().toLowerCase();
  if (STATUS.test(value)) return { min: Number(value), max: Number(value) };
  const cls = STATUS_CLASS.exec(value);
  if (cls !== null) return { min: Number(cls[1]) * 100, max: Number(cls[1]) * 100 + 99 };
  const range = STATUS_RANGE.exec(value);
  if (range !== null && Number(range[1]) <= Number(range[2])) return { min: Number(range[1]), max: Number(range[2]) };
  throw new SvcError(
    'SVC_ERR_INVALID_INPUT',
    `${field} must be an HTTP status from 100 to 599 (404), a class (4xx) or a range (400-599), got "${text}"`,
  );
}

/** A status filter as a form value: `404`, `4xx` or `400-599`. */
export function statusText(range: StatusRange): string {
  if (range.min === range.max) return String(range.min);
  if (range.min % 100 === 0 && range.max === range.min + 99) return `${range.min / 100}xx`;
  return `${range.min}-${range.max}`;
}

/** The statuses the service itself answers: 200, 202 and every status of the error catalogue, ascending. */
export function answeredStatuses(): number[] {
  return [...new Set([200, 202, ...Object.values(ErrorCodes)])].sort((a, b) => a - b);
}

/** The event kinds a search may name: every kind the log holds but the trace kinds. */
export function searchableEventKinds(): string[] {
  return EVENT_KINDS.filter((k) => !TRACE_EVENTS.has(k));
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
  const kinds = searchableEventKinds();
  if (!kinds.includes(event))
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
  return log.query({
    ...storeQuery(filter),
    beforeId: page.beforeId,
    limit: Math.min(page.limit, MAX_ROWS_PER_READ),
  });
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
    ...storeQuery(filter),
    afterId,
    beforeId: upToId === undefined ? undefined : upToId + 1,
    oldestFirst: true,
    limit: Math.min(limit, MAX_ROWS_PER_READ),
  });
}

/**
 * The two ways the Executions page lists the log: `deliveries`, one row per delivery (its terminal
 * row: completed, queue_processed, queue_filtered, dlq_moved), or `rows`, every row as written.
 */
export type ExecutionsView = 'deliveries' | 'rows';

/**
 * Reads the view a search asks for. Without one it is `deliveries`, unless the search names an
 * event kind: a search for a kind (the Overview's counters, older bookmarks) is a search of rows.
 * An event kind is a filter of the `rows` view only: with `deliveries` it is refused, never dropped.
 * @throws SvcError SVC_ERR_INVALID_INPUT for another view, or an event kind with `deliveries`
 */
export function readView(view: string | undefined, event: string | undefined): ExecutionsView {
  const named = event !== undefined && event.trim() !== '';
  if (view === undefined || view === '') return named ? 'rows' : 'deliveries';
  if (view !== 'deliveries' && view !== 'rows')
    throw new SvcError('SVC_ERR_INVALID_INPUT', `view must be deliveries or rows, got "${view}"`);
  if (view === 'deliveries' && named)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `event filters the rows view (view=rows); the deliveries view lists one row per delivery`,
    );
  return view;
}

/**
 * One page of deliveries, newest first: the terminal row of each (one per delivery), which carries
 * its duration and failing step. One query over the id range (or the tenant/flow index), filtered
 * by kind: no lookup per row.
 * @param page as searchEvents'
 */
export async function searchDeliveries(
  log: EventLogStore,
  filter: LogFilter,
  page: { beforeId?: number; limit: number },
): Promise<StoredEvent[]> {
  return log.query({
    ...storeQuery(filter),
    events: TERMINAL_EVENTS,
    beforeId: page.beforeId,
    limit: Math.min(page.limit, MAX_ROWS_PER_READ),
  });
}

/** Whether a row ends a delivery (and so carries its duration and failing step). */
export function isTerminal(row: Pick<StoredEvent, 'event'>): boolean {
  return (TERMINAL_EVENTS as readonly string[]).includes(row.event);
}

/** How a delivery came in, by its terminal row: `queue` for a queued message, else `run` (/run, SOAP, gRPC, cron). */
export function deliveryKind(row: Pick<StoredEvent, 'event'>): 'run' | 'queue' {
  return row.event === 'completed' ? 'run' : 'queue';
}

/**
 * How a delivery ended, by its terminal row: the row's own outcome where it has one (queue rows;
 * a completed row's `fault_handled` or `replayed`), else a completed row's status says it:
 * `failed` from 400 on, `succeeded` below.
 */
export function deliveryOutcome(row: Pick<StoredEvent, 'event' | 'outcome' | 'http_status'>): string {
  if (row.outcome !== null) return row.outcome;
  if (row.event === 'completed') return row.http_status !== null && row.http_status >= 400 ? 'failed' : 'succeeded';
  return '';
}

/** The store's query for a filter: the status range as its two bounds. */
function storeQuery({ status, ...rest }: LogFilter): EventQuery {
  return status === undefined ? rest : { ...rest, http_status_min: status.min, http_status_max: status.max };
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

const DAY = /^(\d{4}-\d{2}-\d{2})$/;
const INSTANT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(?::(\d{2})(?:\.(\d+))?)?Z?$/;

/** What the time fields accept, for every refusal. */
const TIME_FORMS =
  'a duration back from now (30s, 10m, 2h, 7d), a UTC day (2026-01-31) or a UTC time to the minute, second or millisecond (2026-01-31T08:00, 2026-01-31T08:00:00Z, 2026-01-31T08:00:00.123Z)';

/**
 * A time as an operator writes it, and the part of it they wrote: a duration back from `nowMs`
 * (to the millisecond), a UTC day, or a UTC time to the minute, second or millisecond (digits past
 * the third are dropped), with or without its `Z`. An offset other than Z is refused: every time
 * the service stores and shows is UTC.
 */
function readTime(text: string, nowMs: number, field: string): { at: Date; written: string } {
  const value = text.trim();
  const back = durationMs(value);
  if (back !== undefined) {
    const at = new Date(nowMs - back);
    return { at, written: at.toISOString().slice(0, 23) };
  }
  const day = DAY.exec(value);
  const instant = INSTANT.exec(value);
  let written: string | undefined;
  let iso: string | undefined;
  if (day !== null) {
    written = day[1]!;
    iso = `${written}T00:00:00.000Z`;
  } else if (instant !== null) {
    const [, hm, s, frac] = instant;
    const ms = frac?.slice(0, 3);
    written = `${hm}${s === undefined ? '' : `:${s}`}${ms === undefined ? '' : `.${ms}`}`;
    iso = `${hm}:${s ?? '00'}.${(ms ?? '').padEnd(3, '0')}Z`;
  }
  const at = iso === undefined ? undefined : new Date(iso);
  // A date that rolls over (February 30th, 25:00) is refused rather than read as another time.
  if (written === undefined || at === undefined || Number.isNaN(at.getTime()) || at.toISOString() !== iso)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `${field} must be ${TIME_FORMS}, got "${text}"`);
  return { at, written };
}

/**
 * Reads a `since` bound (see `readTime` for the forms). Returns the instant to the millisecond,
 * `YYYY-MM-DDTHH:MM:SS.mmmZ`, the form log rows carry.
 * @param field how the message names the field (`--since`, `since`)
 * @throws SvcError SVC_ERR_INVALID_INPUT for anything else (an offset other than Z, an impossible date)
 */
export function parseSince(text: string, nowMs: number = Date.now(), field = '--since'): string {
  return readTime(text, nowMs, field).at.toISOString();
}

/**
 * Reads an `until` bound (the forms of `parseSince`). Inclusive to the precision written:
 * `2026-01-31` takes in the whole day, `2026-01-31T08:00` the whole minute, a time to the
 * millisecond that millisecond. Returns the part written, without its `Z` (`LogFilter.until`).
 * @throws SvcError SVC_ERR_INVALID_INPUT as parseSince
 */
export function parseUntil(text: string, nowMs: number = Date.now(), field = '--until'): string {
  return readTime(text, nowMs, field).written;
}

/**
 * `svc logs`: the structured event log (`log.db` beside --db, or the store of --store), oldest first, optionally followed
 * until SIGINT or SIGTERM. Trace rows are never printed (docs/tracing.md): the reads go through
 * app/use-cases/event-search.ts, the same use case as the UI's Executions page.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  checkEventKind,
  eventsAfter,
  parseSince,
  parseStatus,
  parseUntil,
  tailStart,
  type LogFilter,
  type StatusRange,
} from '../app/use-cases/event-search.js';
import { nonEmptyArg, svcArg } from './args.js';
import { addStoreOptions, nameArg, type StoreFlags, tenantOption } from './options.js';
import type { OpenedStore } from '../storage/index.js';
import { withStore } from './stores.js';
import type { EventLogStore, StoredEvent } from '../store/contracts/index.js';

/** Rows read per query while printing or following: what bounds the command's memory. */
const BATCH_ROWS = 100;
/** How often `--follow` looks for new rows, in ms. */
const FOLLOW_POLL_MS = 500;
const MAX_LIMIT = 10_000;

export function registerLogs(program: Command): void {
  const command = program
    .command('logs')
    .description(
      'print the structured event log (log.db beside --db, or the PostgreSQL store of --store), oldest first: the newest --limit matching rows, then with --follow each new row until Ctrl-C or SIGTERM (exit 0). Trace rows (step_traced, egress_traced) are never printed',
    )
    .addOption(tenantOption('only this tenant'))
    .addOption(new Option('--flow <name>', 'only this flow').argParser(nameArg('flow')))
    .addOption(
      new Option(
        '--correlation-id <id>',
        'only this delivery (a scan of the table: add --tenant and --flow to narrow it)',
      ).argParser(nonEmptyArg('--correlation-id')),
    )
    .addOption(
      new Option(
        '--event <kind>',
        'only this kind: received, completed, access_denied, queue_failed, dlq_moved ... (docs/events.md)',
      ).argParser(svcArg(checkEventKind)),
    )
    .addOption(
      new Option(
        '--since <when>',
        'only rows at or after: a duration back from now (30s, 10m, 2h, 7d), a UTC day (2026-01-31) or instant (2026-01-31T08:00:00Z)',
      ).argParser(svcArg((v) => parseSince(v))),
    )
    .addOption(
      new Option(
        '--until <when>',
        'only rows at or before, inclusive to the precision written (2026-01-31 is the whole day): the forms of --since',
      )
        .argParser(svcArg((v) => parseUntil(v)))
        .conflicts('follow'),
    )
    .addOption(
      new Option(
        '--status <status>',
        'only rows with this HTTP status (404), class (4xx) or range (400-599)',
      ).argParser(svcArg((v) => parseStatus(v, '--status'))),
    )
    .addOption(
      new Option('-n, --limit <n>', `newest matching rows printed before following, 0 to ${MAX_LIMIT}`)
        .default(100)
        .argParser(limitArg),
    )
    .addOption(
      new Option(
        '-f, --follow',
        'keep printing new rows as they are written (polled every 500 ms) until SIGINT or SIGTERM',
      ),
    )
    .addOption(new Option('--json', 'print JSON Lines: one object per row, payload included'))
    .action(logs);
  addStoreOptions(command);
}

function limitArg(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > MAX_LIMIT)
    throw new InvalidArgumentError(`--limit must be a whole number from 0 to ${MAX_LIMIT}, got "${value}"`);
  return Number(value);
}

export interface LogsOptions extends StoreFlags {
  tenant?: string;
  flow?: string;
  correlationId?: string;
  event?: string;
  since?: string;
  until?: string;
  status?: StatusRange;
  limit: number;
  follow?: boolean;
  json?: boolean;
}

export async function logs(opts: LogsOptions): Promise<void> {
  const filter: LogFilter = {
    tenant: opts.tenant,
    flow: opts.flow,
    correlation_id: opts.correlationId,
    event: opts.event,
    since: opts.since,
    until: opts.until,
    status: opts.status,
  };
  const reader = { filter, opts, printer: new RowPrinter(opts.json === true), stop: new StopSignal() };
  try {
    await withStore(opts, (store) => printStoreLog(store, reader), { readOnly: true });
  } finally {
    reader.stop.dispose();
  }
}

interface LogReader {
  readonly filter: LogFilter;
  readonly opts: LogsOptions;
  readonly printer: RowPrinter;
  readonly stop: StopSignal;
}

/**
 * The store's event log. On a state directory `log.db` may not exist yet: then there is nothing to
 * print, or, followed, it is waited for until the server creates it (every row is then new); the
 * store is opened read-only, so a missing file is never created here.
 */
async function printStoreLog(store: OpenedStore, reader: LogReader): Promise<void> {
  const { opts, stop } = reader;
  if (!store.has('log') && !opts.follow) {
    if (!opts.json) process.stderr.write(`No log rows: ${logFile(store)} does not exist yet (svc serve creates it).\n`);
    return;
  }
  while (!store.has('log') && !stop.requested) await stop.sleep(FOLLOW_POLL_MS);
  if (store.has('log')) await printLog(store.eventLog, reader);
}

function logFile(store: OpenedStore): string {
  return store.kind === 'sqlite' ? store.paths.logDb : store.location;
}

/** The newest --limit matching rows, oldest first, then with --follow every new row until stopped. */
async function printLog(log: EventLogStore, { filter, opts, printer, stop }: LogReader): Promise<void> {
  const start = await tailStart(log, filter, opts.limit);
  for (
    let after = start.afterId, batch = await readBatch(log, filter, after, start.lastId);
    batch.length > 0 && !printer.closed;
    batch = await readBatch(log, filter, after, start.lastId)
  ) {
    await printer.print(batch);
    after = batch.at(-1)!.id;
  }
  let lastId = start.lastId;
  if (!opts.follow) {
    if (printer.rows === 0 && opts.limit > 0 && !opts.json) process.stderr.write('No log rows match.\n');
    return;
  }
  // Past the tail every new row is after lastId: the time bound has done its work.
  const followFilter: LogFilter = { ...filter, since: undefined };
  while (!stop.requested && !printer.closed) {
    const batch = await readBatch(log, followFilter, lastId);
    if (batch.length > 0) {
      await printer.print(batch);
      lastId = batch.at(-1)!.id;
    }
    if (batch.length < BATCH_ROWS) await stop.sleep(FOLLOW_POLL_MS);
  }
}

/** One batch after `afterId`; an SQLite database busy past its timeout (a writer holding the lock) reads as "nothing yet". */
async function readBatch(
  log: EventLogStore,
  filter: LogFilter,
  afterId: number,
  upToId?: number,
): Promise<StoredEvent[]> {
  try {
    return await eventsAfter(log, filter, afterId, BATCH_ROWS, upToId);
  } catch (err) {
    if (String((err as { code?: unknown }).code).startsWith('SQLITE_BUSY')) return [];
    throw err;
  }
}

/** SIGINT and SIGTERM end `--follow` cleanly: the current batch is finished, the database closed, exit 0. */
class StopSignal {
  requested = false;
  #wake: (() => void) | undefined;
  readonly #onSignal = () => {
    this.requested = true;
    this.#wake?.();
  };

  constructor() {
    process.on('SIGINT', this.#onSignal);
    process.on('SIGTERM', this.#onSignal);
  }

  /** Waits `ms`, or less when a stop is requested meanwhile. */
  async sleep(ms: number): Promise<void> {
    if (this.requested) return;
    const ac = new AbortController();
    this.#wake = () => ac.abort();
    await sleep(ms, undefined, { signal: ac.signal }).catch(() => undefined);
    this.#wake = undefined;
  }

  dispose(): void {
    process.off('SIGINT', this.#onSignal);
    process.off('SIGTERM', this.#onSignal);
  }
}

/** Writes rows to stdout, waiting for it to drain (a slow reader holds the command back, not its memory). */
class RowPrinter {
  rows = 0;
  /** stdout went away (e.g. `svc logs -f | head`): stop quietly. */
  closed = false;

  constructor(readonly json: boolean) {
    process.stdout.on('error', () => (this.closed = true));
  }

  async print(batch: readonly StoredEvent[]): Promise<void> {
    if (this.closed) return;
    const text = batch.map((e) => (this.json ? JSON.stringify(e) : formatRow(e))).join('\n');
    this.rows += batch.length;
    if (!process.stdout.write(`${text}\n`)) await drained();
  }
}

/** Resolves when stdout drains or fails, whichever comes first, and leaves no listener behind. */
function drained(): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      process.stdout.off('drain', done);
      process.stdout.off('error', done);
      resolve();
    };
    process.stdout.once('drain', done);
    process.stdout.once('error', done);
  });
}

/** `ts  event  tenant/flow  key=value ...`: one line per row, the payload left to --json. */
export function formatRow(e: StoredEvent): string {
  const parts = [e.ts, e.event.padEnd(15), `${e.tenant ?? '-'}/${e.flow ?? '-'}`];
  if (e.step !== null) parts.push(`step=${e.step}`);
  if (e.http_status !== null) parts.push(`status=${e.http_status}`);
  if (e.outcome !== null) parts.push(`outcome=${e.outcome}`);
  if (e.correlation_id !== null) parts.push(`correlation_id=${e.correlation_id}`);
  if (e.reason !== null) parts.push(`reason=${JSON.stringify(e.reason)}`);
  return parts.join('  ');
}

/** `svc dlq list | replay | discard`: inspect and act on dead letters in `queues/` beside --db, or in the PostgreSQL store of --store. */
import { Command, Option } from 'commander';
import { ExitError, SvcError } from '../common/errors.js';
import { discardDeadLetter, listDeadLetters, replayDeadLetter } from '../app/use-cases/dlq.js';
import type { DeadLetterRow } from '../queue/index.js';
import { defaultDbPath } from '../common/paths.js';
import { addStoreOptions, intArg, nameArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';

/** `--db`: for dlq it only locates the `queues/` directory beside the registry database. */
function queuesDbOption(): Option {
  return new Option('--db <path>', 'registry database; only the queues/ directory beside it is used').default(
    defaultDbPath(),
    '~/.svc/registry.db',
  );
}

export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description('list, replay or discard dead-lettered queue messages');
  const list = dlq
    .command('list')
    .description('list pending dead letters (tenant, flow, id, attempts, enqueued_at, failed_at, last_error)')
    .addOption(tenantOption('only this tenant'))
    .addOption(new Option('--flow <flow>', 'only this flow').argParser(nameArg('flow')))
    .addOption(new Option('--json', 'print one JSON array (with payloads) instead of a table'))
    .action(listCommand);
  addStoreOptions(list, queuesDbOption());
  for (const [name, what] of [
    [
      'replay',
      "append a dead letter's payload to the back of its queue as a new message (new id, fresh attempts, fresh correlation id)",
    ],
    ['discard', "hide a dead letter at once; its body is removed at the queue's next drain (no undo)"],
  ] as const) {
    const command = dlq
      .command(name)
      .description(what)
      .addOption(tenantOption('tenant of the queue', { required: true }))
      .requiredOption('--flow <flow>', 'flow of the queue', nameArg('flow'))
      .requiredOption('--id <n>', 'message id of the dead letter (see svc dlq list)', intArg('--id', 1))
      .action(name === 'replay' ? replay : discard);
    addStoreOptions(command, queuesDbOption());
  }
}

interface ListFlags extends StoreFlags {
  tenant?: string;
  flow?: string;
  json?: boolean;
}

interface ActFlags extends StoreFlags {
  tenant: string;
  flow: string;
  id: number;
}

/** Turns a refusal of the library into exit 1 with its message. */
/**
 * Message ids are reserved one at a time so a command wastes none. The audit trail (audit.db) is
 * opened at the first entry a replay or discard writes: a listing does not create it.
 */
const QUEUE_OPTS = { queues: { idBlockSize: 1 } } as const;

async function refusing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof SvcError && err.status < 500) throw new ExitError(1, `error: ${err.message}`);
    throw err;
  }
}

function table(rows: DeadLetterRow[]): string {
  const head = ['TENANT', 'FLOW', 'ID', 'ATTEMPTS', 'ENQUEUED_AT', 'FAILED_AT', 'LAST_ERROR'];
  const cells = rows.map((r) => [
    r.tenant,
    r.flow,
    String(r.id),
    String(r.attempts),
    r.enqueued_at,
    r.failed_at,
    r.last_error.replace(/\s+/g, ' '),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!))).join('  ');
  return [line(head), ...cells.map(line)].join('\n');
}

async function listCommand(flags: ListFlags): Promise<void> {
  const rows = await refusing(() =>
    withStore(
      flags,
      (s) => listDeadLetters({ store: s.queues }, { tenant: flags.tenant, flow: flags.flow }),
      QUEUE_OPTS,
    ),
  );
  if (flags.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
  else if (rows.length === 0) process.stdout.write('DLQ is empty.\n');
  else process.stdout.write(`${table(rows)}\n`);
}

async function replay(flags: ActFlags): Promise<void> {
  const r = await refusing(() =>
    withStore(
      flags,
      (s) =>
        replayDeadLetter({ store: s.queues }, flags.tenant, flags.flow, flags.id, { audit: s.audit, actor: 'cli' }),
      QUEUE_OPTS,
    ),
  );
  process.stdout.write(
    `replayed dead letter ${r.entry.id} of ${flags.tenant}/${flags.flow} as message ${r.message.id} (correlation id ${r.message.correlationId})\n`,
  );
}

async function discard(flags: ActFlags): Promise<void> {
  const e = await refusing(() =>
    withStore(
      flags,
      (s) =>
        discardDeadLetter({ store: s.queues }, flags.tenant, flags.flow, flags.id, { audit: s.audit, actor: 'cli' }),
      QUEUE_OPTS,
    ),
  );
  process.stdout.write(`discarded dead letter ${e.id} of ${flags.tenant}/${flags.flow}\n`);
}

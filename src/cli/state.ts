/** `svc state list | release`: deduplication and correlation rows (keys only as fingerprints; state content never shown). */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ExitError } from '../common/errors.js';
import { keyFingerprint, STATE_KEY_ENV, stateKeyFromEnv } from '../app/runtime/dedup-fingerprint.js';
import type { CorrelationRow, InboxRow } from '../store/contracts/index.js';
import { addStoreOptions, intArg, nameArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';

const INBOX_STATUSES = ['in_flight', 'done', 'failed'] as const;
const CORRELATION_STATUSES = ['open', 'timed_out', 'closed', 'closed_late'] as const;
const ALL_STATUSES = [...INBOX_STATUSES, ...CORRELATION_STATUSES, 'all'];
/** A look at a mistyped --db must not leave a new state directory behind (a release finds no row there). */
const READ_ONLY = { readOnly: true } as const;

export function registerState(program: Command): void {
  const state = program
    .command('state')
    .description('inspect deduplication and correlation state; release a stuck deduplication lease');
  state
    .command('list')
    .description('two sections, deduplication and correlations (default statuses: in_flight; open and timed_out)')
    .addOption(tenantOption('only this tenant'))
    .addOption(new Option('--flow <flow>', 'only this flow').argParser(nameArg('flow')))
    .addOption(new Option('--status <status>', `one of ${ALL_STATUSES.join(', ')}`).argParser(statusArg))
    .addOption(new Option('--limit <n>', 'most rows per section').argParser(intArg('--limit', 1)).default(50))
    .addOption(
      new Option(
        '--json',
        'print one JSON object {deduplication: [...], correlations: [...]} (keys as fingerprints, no state content)',
      ),
    )
    .action(list);
  state
    .command('release')
    .description(
      'clear the lease of an in_flight deduplication row so the next delivery of the key runs (it may run twice)',
    )
    .addOption(tenantOption('tenant of the flow', { required: true }))
    .requiredOption('--flow <flow>', 'flow of the row', nameArg('flow'))
    .option('--key-hash <hash>', "the row's key fingerprint, as printed by svc state list")
    .option('--key <key>', `the business key itself (needs ${STATE_KEY_ENV} in the environment)`)
    .option(
      '--accept-double-execution',
      'confirm that the first delivery may still be running and the key may execute twice',
    )
    .action(release);
  for (const c of state.commands) addStoreOptions(c);
}

function statusArg(value: string): string {
  if (!ALL_STATUSES.includes(value))
    throw new InvalidArgumentError(`--status must be one of ${ALL_STATUSES.join(', ')}, got "${value}"`);
  return value;
}

interface ListFlags extends StoreFlags {
  tenant?: string;
  flow?: string;
  status?: string;
  limit: number;
  json?: boolean;
}

async function list(flags: ListFlags): Promise<void> {
  const s = flags.status;
  const inboxStatuses: readonly string[] =
    s === undefined ? ['in_flight'] : s === 'all' ? INBOX_STATUSES : INBOX_STATUSES.filter((x) => x === s);
  const corrStatuses: readonly string[] =
    s === undefined
      ? ['open', 'timed_out']
      : s === 'all'
        ? CORRELATION_STATUSES
        : CORRELATION_STATUSES.filter((x) => x === s);
  await withStore(
    flags,
    async ({ flowState: store }) => {
      const filter = { tenant: flags.tenant, flow: flags.flow, limit: flags.limit };
      const inbox = await store.listInbox({ ...filter, statuses: inboxStatuses });
      const corr = await store.listCorrelations({ ...filter, statuses: corrStatuses });
      if (flags.json) {
        out(JSON.stringify({ deduplication: inbox.map(inboxJson), correlations: corr.map(corrJson) }, null, 2));
        return;
      }
      out(`Deduplication (status: ${inboxStatuses.join(', ') || 'none selected'})`);
      out(inbox.length === 0 ? '  (no rows)' : formatTable(INBOX_HEADERS, inbox.map(inboxCells)));
      out('');
      out(`Correlations (status: ${corrStatuses.join(', ') || 'none selected'})`);
      out(corr.length === 0 ? '  (no rows)' : formatTable(CORR_HEADERS, corr.map(corrCells)));
    },
    READ_ONLY,
  );
}

const INBOX_HEADERS = [
  'TENANT',
  'FLOW',
  'STATUS',
  'CLAIMED_AT',
  'EXPIRES_AT',
  'LEASE',
  'FIRST_CORRELATION_ID',
  'KEY_HASH',
];
function inboxCells(r: InboxRow): string[] {
  const lease = r.status !== 'in_flight' ? '-' : r.lease_expires_at === null ? 'released' : r.lease_expires_at;
  return [r.tenant, r.flow, r.status, r.claimed_at, r.expires_at, lease, r.first_correlation_id, r.key_hash];
}

/** The table's fields; memoized answers are never printed. */
function inboxJson(r: InboxRow): Record<string, unknown> {
  return {
    tenant: r.tenant,
    flow: r.flow,
    status: r.status,
    claimed_at: r.claimed_at,
    expires_at: r.expires_at,
    lease_expires_at: r.lease_expires_at,
    first_correlation_id: r.first_correlation_id,
    key_hash: r.key_hash,
    finished_at: r.finished_at,
  };
}

const CORR_HEADERS = [
  'TENANT',
  'FLOW',
  'STEP',
  'STATUS',
  'OPENED_AT',
  'DEADLINE',
  'ON_TIMEOUT',
  'CORRELATION_ID',
  'STATE',
  'KEY_HASH',
];
function corrCells(r: CorrelationRow): string[] {
  // The content of correlation_state is never shown: only whether one was recorded.
  return [
    r.tenant,
    r.flow,
    r.step,
    r.status,
    r.opened_at,
    r.deadline,
    r.on_timeout_flow ?? '-',
    r.correlation_id,
    r.state === null ? 'absent' : 'present',
    r.key_hash,
  ];
}

/** The table's fields: whether a correlation_state was recorded, never its content. */
function corrJson(r: CorrelationRow): Record<string, unknown> {
  return {
    tenant: r.tenant,
    flow: r.flow,
    step: r.step,
    status: r.status,
    opened_at: r.opened_at,
    deadline: r.deadline,
    on_timeout_flow: r.on_timeout_flow,
    correlation_id: r.correlation_id,
    state_recorded: r.state !== null,
    key_hash: r.key_hash,
    closed_at: r.closed_at,
  };
}

interface ReleaseFlags extends StoreFlags {
  tenant: string;
  flow: string;
  keyHash?: string;
  key?: string;
  acceptDoubleExecution?: boolean;
}

async function release(flags: ReleaseFlags): Promise<void> {
  if ((flags.keyHash === undefined) === (flags.key === undefined)) {
    throw new ExitError(2, 'error: give exactly one of --key-hash <hash> (from svc state list) or --key <key>');
  }
  let keyHash = flags.keyHash?.trim().toLowerCase();
  if (flags.key !== undefined) {
    const stateKey = stateKeyFromEnv();
    if (stateKey === undefined) {
      throw new ExitError(
        1,
        `error: --key needs the state key ${STATE_KEY_ENV} in the environment (the one the server uses); or use --key-hash from svc state list`,
      );
    }
    keyHash = keyFingerprint(flags.tenant, flags.flow, flags.key, stateKey);
  }
  await withStore(
    flags,
    async ({ flowState: store }) => {
      const row = await store.getInbox(flags.tenant, flags.flow, keyHash!);
      if (row === undefined)
        throw new ExitError(
          1,
          `error: no deduplication row for ${flags.tenant}/${flags.flow} with key hash ${keyHash}; see svc state list --status all`,
        );
      const table = formatTable(INBOX_HEADERS, [inboxCells(row)]);
      if (flags.acceptDoubleExecution !== true) {
        out(table);
        throw new ExitError(
          1,
          'refused: releasing lets the next delivery of this key run while the first may still be running (double execution); nothing was changed. Re-run with --accept-double-execution to release it',
        );
      }
      if (row.status !== 'in_flight')
        throw new ExitError(
          1,
          `error: the row is ${row.status}, not in_flight; there is no lease to release\n${table}`,
        );
      await store.release(flags.tenant, flags.flow, keyHash!);
      out(`released: ${flags.tenant}/${flags.flow} key hash ${keyHash}; the next delivery of this key may run`);
    },
    READ_ONLY,
  );
}

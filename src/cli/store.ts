/** `svc store migrate --from <state directory> --to postgres://...`: an installation moved to a PostgreSQL store. */
import { Command, Option } from 'commander';
import {
  migrateStore,
  NOT_COPIED,
  StoreMigrationRefusedError,
  type PartOutcome,
  type StoreMigrateResult,
} from '../app/maintenance/store-migrate.js';
import { ExitError } from '../common/errors.js';
import { formatTable, out } from './table.js';

export function registerStore(program: Command): void {
  const store = program.command('store').description('the storage backend of an installation');
  store
    .command('migrate')
    .description(
      'copy an installation from its state directory into a PostgreSQL store: tenants, API keys (hashes; ids kept), flows and their versions in ' +
        'deploy order, protobuf descriptors, certificates, settings, trace flags, deduplication and correlation rows, audit chains (verbatim, ' +
        'so they verify), UI accounts and the CSRF key, and per queue its waiting messages, scheduled retries and pending dead letters with ' +
        'their ids and an id counter that never reissues one. Not copied: UI sessions (users sign in again) and the event log (log.db). ' +
        'Run it with svc serve stopped. A rerun copies nothing twice and finishes a run that was stopped half-way. Refused, with nothing ' +
        'written (exit 1): a missing state directory, one a running svc serve uses, one written by a newer svc, a target schema newer than ' +
        "this build, a target holding another installation's data, a target another migrate is writing to",
    )
    .addOption(
      new Option(
        '--from <dir>',
        'the state directory to copy (the directory of registry.db; the registry.db path is accepted too)',
      ).makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--to <url>',
        'the PostgreSQL store: postgres://user@host:port/database[?schema=name]',
      ).makeOptionMandatory(),
    )
    .addOption(new Option('--json', 'print one JSON object with every part'))
    .action(migrate);
}

interface MigrateFlags {
  from: string;
  to: string;
  json?: boolean;
}

async function migrate(flags: MigrateFlags): Promise<void> {
  let result: StoreMigrateResult;
  try {
    result = await migrateStore({
      from: flags.from,
      to: flags.to,
      onPart: (p) =>
        process.stderr.write(
          p.status === 'copied'
            ? `copied: ${p.part} (${p.rows} rows, ${p.inserted} inserted now)\n`
            : `already done: ${p.part} (${p.rows} rows, by an earlier run)\n`,
        ),
      pauseAfterCommitMs: testPauseMs(),
    });
  } catch (err) {
    if (err instanceof StoreMigrationRefusedError)
      throw new ExitError(1, `error: refused (${err.reason}), nothing written: ${err.message}`);
    throw new ExitError(
      1,
      `error: ${err instanceof Error ? err.message : String(err)}\nwhat was committed stays; run the same command again to finish`,
    );
  }
  if (flags.json) {
    out(
      JSON.stringify(
        {
          state_dir: result.stateDir,
          installation_id: result.installationId,
          target: result.target,
          schema_version: result.schemaVersion,
          parts: result.parts.map((p) => ({
            part: p.part,
            status: p.status,
            rows: p.rows,
            inserted: p.inserted,
            ...(p.queue && {
              fresh: p.queue.fresh,
              retries: p.queue.retries,
              dead_letters: p.queue.deadLetters,
              next_id: p.queue.nextId,
            }),
          })),
          not_copied: result.notCopied,
        },
        null,
        2,
      ),
    );
    return;
  }
  out(`source: ${result.stateDir} (installation ${result.installationId})`);
  out(`target: ${result.target} (schema version ${result.schemaVersion})`);
  out(formatTable(['PART', 'STATUS', 'ROWS', 'INSERTED', 'DETAIL'], result.parts.map(cells)));
  out(`not copied: ${NOT_COPIED.join('; ')}`);
}

function cells(p: PartOutcome): string[] {
  const detail =
    p.queue === undefined
      ? ''
      : `${p.queue.fresh} waiting, ${p.queue.retries} retries, ${p.queue.deadLetters} dead letters, next id ${p.queue.nextId}`;
  return [p.part, p.status === 'copied' ? 'copied' : 'already done', String(p.rows), String(p.inserted), detail];
}

/** SVC_TEST_MIGRATE_PAUSE_MS: test only (docs/scale-out.md), a pause after each commit so a test can kill the run half-way. */
function testPauseMs(): number {
  const v = Number(process.env.SVC_TEST_MIGRATE_PAUSE_MS ?? 0);
  return Number.isFinite(v) && v > 0 ? v : 0;
}

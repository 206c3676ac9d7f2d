/** `svc storage vacuum`: the state directory's databases converted to give freed space back (offline). */
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  DATABASE_NAMES,
  vacuumStateDatabases,
  type DatabaseName,
  type StorageVacuumOutcome,
} from '../app/maintenance/storage-space.js';
import { ExitError } from '../common/errors.js';
import { statePaths } from '../common/paths.js';
import { addSqliteOnlyOptions } from './options.js';
import { formatTable, out } from './table.js';

export function registerStorage(program: Command): void {
  const storage = program.command('storage').description("disk space of the state directory's databases");
  const vacuumCommand = storage
    .command('vacuum')
    .description(
      'rebuild each database (registry, audit, log, ui) with a full VACUUM in incremental auto-vacuum mode, so that log retention and ' +
        'the flow-state purge give freed space back to the disk; a database already in that mode only gives its free pages back. ' +
        "Run it with svc serve stopped: it holds each file's write lock while it runs (about 2 s per 100 MiB) and needs free disk space " +
        "of twice the file's size. Files created by this version, and older ones under 8 MiB, are converted on their own",
    )
    .addOption(
      new Option('--only <names>', `comma-separated subset of ${DATABASE_NAMES.join(', ')}`).argParser(namesArg),
    )
    .addOption(new Option('--json', 'print one JSON array, one object per database'))
    .action(vacuum);
  addSqliteOnlyOptions(
    vacuumCommand,
    'it rebuilds the SQLite files of the state directory (PostgreSQL reclaims space with its own VACUUM)',
  );
}

interface VacuumFlags {
  only?: DatabaseName[];
  json?: boolean;
  db: string;
}

function namesArg(value: string): DatabaseName[] {
  const names = value.split(',').map((s) => s.trim());
  for (const n of names)
    if (!(DATABASE_NAMES as readonly string[]).includes(n))
      throw new InvalidArgumentError(`--only takes ${DATABASE_NAMES.join(', ')}, got "${n}"`);
  return names as DatabaseName[];
}

function vacuum(flags: VacuumFlags): void {
  const results = vacuumStateDatabases(statePaths(flags.db), flags.only);
  if (flags.json) out(JSON.stringify(results));
  else out(formatTable(['DATABASE', 'RESULT', 'BEFORE', 'AFTER', 'MS', 'PATH'], results.map(cells)));
  const refused = results.filter((r) => r.result === 'no_room');
  if (refused.length > 0)
    throw new ExitError(
      1,
      refused.map((r) => `error: ${r.name} not vacuumed: ${r.result === 'no_room' ? r.detail : ''}`).join('\n'),
    );
}

function cells(r: StorageVacuumOutcome): string[] {
  if (r.result === 'absent') return [r.name, 'absent', '-', '-', '-', r.path];
  if (r.result === 'no_room') return [r.name, 'no room', mib(r.bytes), '-', '-', r.path];
  return [r.name, r.action, mib(r.bytesBefore), mib(r.bytesAfter), String(Math.round(r.ms)), r.path];
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

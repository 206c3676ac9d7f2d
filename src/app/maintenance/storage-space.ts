/**
 * Disk space of the state directory's databases: which files were created before incremental
 * auto-vacuum (their freed pages are reused but never given back), and the offline conversion that
 * `svc storage vacuum` runs. New files are created in incremental mode and small old ones are
 * converted when opened (store/sqlite/db.ts); this is for the large ones.
 */
import { existsSync, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { StatePaths } from '../../common/paths.js';
import {
  AUTO_VACUUM_INCREMENTAL,
  inspectDatabaseFile,
  vacuumFile,
  type DatabaseFileSpace,
  type VacuumFileResult,
} from '../../store/sqlite/auto-vacuum.js';

export const DATABASE_NAMES = ['registry', 'audit', 'log', 'ui'] as const;
export type DatabaseName = (typeof DATABASE_NAMES)[number];

function databasePath(paths: StatePaths, name: DatabaseName): string {
  return { registry: paths.registryDb, audit: paths.auditDb, log: paths.logDb, ui: paths.uiDb }[name];
}

/** The command that converts the databases of the state directory of `paths` offline. */
export function vacuumCommand(paths: StatePaths): string {
  return `svc storage vacuum --db ${paths.registryDb}`;
}

/** The existing databases of the state directory that do not give freed space back (auto_vacuum is not incremental). */
export function databasesWithoutIncrementalVacuum(paths: StatePaths): (DatabaseFileSpace & { name: DatabaseName })[] {
  const out: (DatabaseFileSpace & { name: DatabaseName })[] = [];
  for (const name of DATABASE_NAMES) {
    const path = databasePath(paths, name);
    if (!existsSync(path)) continue;
    const space = inspectDatabaseFile(path);
    if (space.autoVacuum !== AUTO_VACUUM_INCREMENTAL) out.push({ ...space, name });
  }
  return out;
}

export type StorageVacuumOutcome =
  | (VacuumFileResult & { name: DatabaseName; result: 'done' })
  | { name: DatabaseName; path: string; result: 'absent' }
  | { name: DatabaseName; path: string; result: 'no_room'; bytes: number; detail: string };

/**
 * Converts each database of the state directory (or only `only`) to incremental auto-vacuum with
 * a full VACUUM, or gives an already converted one's free pages back. A file is skipped, not
 * touched, when the disk lacks the room a full VACUUM needs (`no_room`).
 */
export function vacuumStateDatabases(paths: StatePaths, only?: readonly DatabaseName[]): StorageVacuumOutcome[] {
  const out: StorageVacuumOutcome[] = [];
  for (const name of only ?? DATABASE_NAMES) {
    const path = databasePath(paths, name);
    if (!existsSync(path)) {
      out.push({ name, path, result: 'absent' });
      continue;
    }
    const space = inspectDatabaseFile(path);
    const shortfall =
      space.autoVacuum === AUTO_VACUUM_INCREMENTAL ? undefined : roomShortfall(paths.stateDir, space.bytes);
    if (shortfall !== undefined) {
      out.push({ name, path, result: 'no_room', bytes: space.bytes, detail: shortfall });
      continue;
    }
    out.push({ ...vacuumFile(path), name, result: 'done' });
  }
  return out;
}

/**
 * A full VACUUM writes a temporary copy of the file (in SQLite's temporary directory) and a
 * rollback journal of up to the file's size beside it. Says what is missing, or undefined.
 */
function roomShortfall(stateDir: string, fileBytes: number): string | undefined {
  const temp = process.env.SQLITE_TMPDIR ?? tmpdir();
  const sameDisk = existsSync(temp) && statSync(temp).dev === statSync(stateDir).dev;
  const needs: [string, number][] = sameDisk
    ? [[stateDir, 2 * fileBytes]]
    : [
        [stateDir, fileBytes],
        [temp, fileBytes],
      ];
  for (const [dir, bytes] of needs) {
    const s = statfsSync(dir);
    const free = s.bavail * s.bsize;
    if (free < bytes) return `needs ${bytes} free bytes on the disk of ${dir}, has ${free}`;
  }
  return undefined;
}
